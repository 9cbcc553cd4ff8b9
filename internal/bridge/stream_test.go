package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

var (
	streamWindow     = flag.Duration("stream.window", 30*time.Second, "BenchmarkStreamingAgent: how long the stream is measured")
	streamTranscript = flag.Int("stream.transcript", 3584<<10, "BenchmarkStreamingAgent: the transcript's size in bytes")
	streamProf       = flag.String("stream.prof", "", "BenchmarkStreamingAgent: a folder for each bridge's CPU profile over the window")
	streamPage       = flag.Bool("stream.page", false, "BenchmarkStreamingAgent: the devices also read each changed conversation: as the web page does (since the revision they hold), and whole, beside a device on the feed alone")
)

// streamSide is one bridge of BenchmarkStreamingAgent, with its device.
type streamSide struct {
	name     string
	noDeltas bool   // the agent ignores the snapshot delta extension for this bridge
	read     string // how the device reads each changed conversation: "" not at all, "since" as the page does, "whole"
	wrote    atomic.Int64
	pid      int
	send     func(string)  // a command to the child bridge (TestLoadChild)
	ready    chan struct{} // the device read the state whole
	events   atomic.Int64
	got      atomic.Int64 // bytes the device read: the conversations' replies, headers included
	reads    atomic.Int64
	deltas   atomic.Int64 // reads answered with a delta
	cpu      float64
	bytes    int64 // from the agent, in the window
	devBytes int64 // to the device, in the window
}

// BenchmarkStreamingAgent measures what one streaming agent costs the
// bridge with a device watching its change feed: a conversation holding a
// 3.5 MiB transcript that gains one ~250-byte item every 100 ms. One agent
// in this process streams it on a socket per bridge, each bridge a child
// process (TestLoadChild) with a device on its feed. By default two
// bridges: one takes snapshot deltas, for the other the agent ignores the
// extension (the whole snapshot at each read, as before deltas). With
// -stream.page, three bridges that all take deltas, whose devices differ:
// one follows the feed alone, one reads each changed conversation as the
// web page does (since the revision it holds: only what changed), one
// reads it whole. Each bridge's CPU share comes from /proc/PID/stat over
// the same window, the bytes the agent wrote to it from its listener, and
// the bytes its device read from the replies.
//
//	go test -run '^$' -bench BenchmarkStreamingAgent -benchtime 1x ./internal/bridge [-args -stream.page]
func BenchmarkStreamingAgent(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sides := []*streamSide{{name: "deltas"}, {name: "whole (extension off)", noDeltas: true}}
	if *streamPage {
		sides = []*streamSide{{name: "feed only"}, {name: "page deltas", read: "since"}, {name: "whole re-reads", read: "whole"}}
	}
	items := transcript(*streamTranscript)
	srv, err := durable.NewServer(wire.Hello{Agent: "streamer"}, quiet())
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.SetSnapshot(streamingSnapshot(items)); err != nil {
		b.Fatal(err)
	}
	for _, s := range sides {
		dir, err := os.MkdirTemp("", "cs") // short: socket paths fit sun_path
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		sock := filepath.Join(dir, "a", "desk", "s.sock")
		l, _, err := durable.Listen(sock)
		if err != nil {
			b.Fatal(err)
		}
		h := srv.Hosted() // reads only: no caller check needed
		if s.noDeltas {
			inner := h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				r.Header.Set(wire.ExtensionsHeader, wire.ExtPush+", "+wire.ExtDetail) // an agent without deltas
				inner.ServeHTTP(w, r)
			})
		}
		hs := &http.Server{Handler: h}
		go hs.Serve(&writeCounter{Listener: l, n: &s.wrote})
		defer hs.Close()
		paths := config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")}
		os.MkdirAll(paths.Runtime, 0o700)
		if err := sources.Save(paths.Sources(), sources.File{Version: 1, Sources: []sources.Source{{Name: "streamer", Socket: sock}}}); err != nil {
			b.Fatal(err)
		}
		url, cred, pid, send, stop := startChildBridge(b, dir)
		defer stop()
		s.pid, s.send, s.ready = pid, send, make(chan struct{})
		go watchFeed(ctx, b, url, cred, s)
	}
	for _, s := range sides {
		<-s.ready
	}
	// Each device read the state once its bridge held the agent: the
	// first whole reads are behind them.
	b.ResetTimer()
	var wg sync.WaitGroup
	start := time.Now()
	for _, s := range sides {
		wg.Go(func() {
			cpu0, err := cpuTicks(s.pid)
			if err != nil {
				b.Error(err)
				return
			}
			wrote0, got0 := s.wrote.Load(), s.got.Load()
			prof := *streamProf != ""
			if prof {
				s.send("cpu " + filepath.Join(*streamProf, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(s.name)+".pprof"))
			}
			<-time.After(*streamWindow)
			if prof {
				s.send("cpu-stop")
			}
			cpu1, err := cpuTicks(s.pid)
			if err != nil {
				b.Error(err)
				return
			}
			s.cpu = float64(cpu1-cpu0) / 100 / time.Since(start).Seconds() // USER_HZ ticks
			s.bytes = s.wrote.Load() - wrote0
			s.devBytes = s.got.Load() - got0
		})
	}
	// The stream: one ~250-byte item every 100 ms; the agent encodes its
	// whole snapshot once for every bridge.
	tick := time.NewTicker(100 * time.Millisecond)
	changes := 0
	for time.Since(start) < *streamWindow {
		<-tick.C
		items = append(items, streamItem(len(items)))
		srv.SetSnapshot(streamingSnapshot(items))
		changes++
	}
	tick.Stop()
	wg.Wait()
	b.StopTimer()
	perChange := func(n int64) float64 { return float64(n) / float64(changes) }
	fmt.Printf("streaming agent (%.1f MiB transcript, %d changes of ~250 bytes in %s, of %d at 100 ms: the agent's own encoding is the limit), load %s\n",
		float64(*streamTranscript)/(1<<20), changes, *streamWindow, int(*streamWindow/(100*time.Millisecond)), testenv.Load())
	for _, s := range sides {
		fmt.Printf("  %-22s bridge %5.2f%% of one core, %9.0f bytes read from the agent per change, %9.0f bytes to the device per change (%d conversation reads, %d deltas), %d feed events\n",
			s.name, s.cpu*100, perChange(s.bytes), perChange(s.devBytes), s.reads.Load(), s.deltas.Load(), s.events.Load())
	}
	if !*streamPage {
		d, w := sides[0], sides[1]
		b.ReportMetric(d.cpu*100, "deltas_%core")
		b.ReportMetric(w.cpu*100, "whole_%core")
		b.ReportMetric(perChange(d.bytes), "deltas_B/change")
		b.ReportMetric(perChange(w.bytes), "whole_B/change")
		fmt.Printf("  deltas / whole: CPU %.3fx, bytes per change %.5fx (budgets: under 5%% of a core, at most 16 KiB per change)\n", d.cpu/w.cpu, perChange(d.bytes)/perChange(w.bytes))
		return
	}
	f, p, w := sides[0], sides[1], sides[2]
	b.ReportMetric(f.cpu*100, "feed_%core")
	b.ReportMetric(p.cpu*100, "page_deltas_%core")
	b.ReportMetric(w.cpu*100, "whole_rereads_%core")
	b.ReportMetric(perChange(p.devBytes), "page_deltas_device_B/change")
	b.ReportMetric(perChange(w.devBytes), "whole_rereads_device_B/change")
	fmt.Printf("  page deltas / whole re-reads: CPU %.3fx, bytes to the device per change %.5fx; page deltas / feed only: CPU %.2fx (budgets: close to the feed alone, at most 16 KiB per change to the device)\n",
		p.cpu/w.cpu, perChange(p.devBytes)/perChange(w.devBytes), p.cpu/f.cpu)
}

// transcript is items of about 250 bytes each, n bytes in all.
func transcript(n int) []wire.Item {
	var out []wire.Item
	for size := 0; size < n; size += 250 {
		out = append(out, streamItem(len(out)))
	}
	return out
}

func streamItem(i int) wire.Item {
	return wire.Item{ID: fmt.Sprintf("i%06d", i), Kind: wire.KindText, Role: "agent",
		Text: fmt.Sprintf("%06d ", i) + strings.Repeat("tool output streams by, line after line; ", 5)}
}

func streamingSnapshot(items []wire.Item) *wire.Snapshot {
	conv := wire.Conversation{ID: "main", Title: "Build", Items: items}
	return &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Desk", Tabs: []wire.Tab{{ID: "t", Title: "Main",
		Conversations: []wire.Conversation{conv, {ID: "other", Title: "Other"}}}}}}}
}

// startChildBridge runs TestLoadChild on dir and returns its device API's
// URL, a device credential, its pid, how to send it a command and how to
// stop it.
func startChildBridge(b *testing.B, dir string) (url, cred string, pid int, send func(string), stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		if f := strings.Fields(lines.Text()); len(f) == 3 && f[0] == "ready" {
			url, cred = f[1], f[2]
			break
		}
	}
	if url == "" {
		b.Fatal("the child bridge never said it was ready")
	}
	go io.Copy(io.Discard, out)
	var mu sync.Mutex
	send = func(line string) { mu.Lock(); defer mu.Unlock(); io.WriteString(stdin, line+"\n") }
	return url, cred, cmd.Process.Pid, send, func() { stdin.Close(); cmd.Wait() }
}

// watchFeed follows a bridge's change feed as a device does, counting its
// events, and reads each changed conversation as s says: since the ETag
// it holds, with it in If-None-Match too (as the web page does), or whole.
func watchFeed(ctx context.Context, b *testing.B, url, cred string, s *streamSide) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Errorf("open the change feed: %v %v", err, resp)
		return
	}
	defer resp.Body.Close()
	held := map[string]string{} // conversation → ETag
	sc := bufio.NewScanner(resp.Body)
	first, ready := true, sync.OnceFunc(func() { close(s.ready) })
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		s.events.Add(1)
		var ev device.Event
		json.Unmarshal([]byte(data), &ev)
		if first {
			// The first event says to read the state: every conversation
			// whole, once the bridge holds the agent, before the window
			// opens.
			first = false
			ev.Changes = outlines(ctx, b, url, cred)
		}
		if s.read == "" {
			ready()
			continue
		}
		for _, ch := range ev.Changes {
			for _, c := range ch.Conversations {
				path := url + "/api/v1/agents/" + ch.Agent + "/conversations/" + c.ID
				key := ch.Agent + "/" + c.ID
				tag := held[key]
				if s.read == "since" && tag != "" {
					path += "?since=" + neturl.QueryEscape(tag)
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", path, nil)
				req.Header.Set("Authorization", "Bearer "+cred)
				if s.read == "since" && tag != "" {
					req.Header.Set("If-None-Match", tag)
				}
				r, err := http.DefaultClient.Do(req)
				if err != nil {
					continue
				}
				n, _ := io.Copy(io.Discard, r.Body)
				r.Body.Close()
				for k, vs := range r.Header {
					for _, v := range vs {
						n += int64(len(k) + len(v) + 4)
					}
				}
				s.got.Add(n + int64(len(r.Proto)+len(r.Status)+4))
				s.reads.Add(1)
				if r.Header.Get(wire.DeltaHeader) != "" {
					s.deltas.Add(1)
				}
				if r.StatusCode == http.StatusOK {
					held[key] = r.Header.Get("ETag")
				}
			}
		}
		ready()
	}
}

// outlines lists every agent's conversations, as /api/v1/agents gives
// them (what a device reads first), once the bridge holds a snapshot.
func outlines(ctx context.Context, b *testing.B, url, cred string) []device.Change {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ctx.Err() == nil; <-tick.C {
		req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/agents", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Errorf("read the agents: %v", err)
			return nil
		}
		var all device.AgentsReply
		err = json.NewDecoder(resp.Body).Decode(&all)
		resp.Body.Close()
		if err != nil {
			b.Errorf("read the agents: %v", err)
			return nil
		}
		var out []device.Change
		for _, a := range all.Agents {
			ch := device.Change{Agent: a.Agent.Name}
			for id, rev := range a.Revs.Conversations {
				ch.Conversations = append(ch.Conversations, device.ConvRev{ID: id, Rev: rev})
			}
			if len(ch.Conversations) > 0 {
				out = append(out, ch)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// writeCounter counts the bytes its connections write: what the agent
// sends the bridge.
type writeCounter struct {
	net.Listener
	n *atomic.Int64
}

func (l *writeCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countedConn{Conn: c, n: l.n}, nil
}

type countedConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}
