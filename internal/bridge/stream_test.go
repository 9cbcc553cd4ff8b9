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
)

var (
	streamWindow     = flag.Duration("stream.window", 30*time.Second, "BenchmarkStreamingAgent: how long the stream is measured")
	streamTranscript = flag.Int("stream.transcript", 3584<<10, "BenchmarkStreamingAgent: the transcript's size in bytes")
	streamPage       = flag.Bool("stream.page", false, "BenchmarkStreamingAgent: each device also reads every changed conversation, as the web page does")
)

// BenchmarkStreamingAgent measures what one streaming agent costs the
// bridge with a device watching its change feed: a conversation holding a
// 3.5 MiB transcript that gains one ~250-byte item every 100 ms. Two
// agents stream the same conversation side by side in this process, each
// to a bridge of its own in a child process (TestLoadChild) with a device
// on its feed: one agent takes snapshot deltas, the other ignores the
// extension (the whole snapshot at each read, as before deltas). Each
// bridge's CPU share comes from /proc/PID/stat over the same window, and
// the bytes each agent wrote to its bridge from its listener.
//
//	go test -run '^$' -bench BenchmarkStreamingAgent -benchtime 1x ./internal/bridge
func BenchmarkStreamingAgent(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type side struct {
		name   string
		srv    *durable.Server
		wrote  atomic.Int64
		pid    int
		events atomic.Int64
		cpu    float64
		bytes  int64
	}
	sides := []*side{{name: "deltas"}, {name: "whole (extension off)"}}
	items := transcript(*streamTranscript)
	for i, s := range sides {
		dir, err := os.MkdirTemp("", "cs") // short: socket paths fit sun_path
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		if s.srv, err = durable.NewServer(wire.Hello{Agent: "streamer"}, quiet()); err != nil {
			b.Fatal(err)
		}
		if err := s.srv.SetSnapshot(streamingSnapshot(items)); err != nil {
			b.Fatal(err)
		}
		sock := filepath.Join(dir, "a", "desk", "s.sock")
		l, _, err := durable.Listen(sock)
		if err != nil {
			b.Fatal(err)
		}
		h := s.srv.Hosted() // reads only: no caller check needed
		if i == 1 {
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
		url, cred, pid, stop := startChildBridge(b, dir)
		defer stop()
		s.pid = pid
		go watchFeed(ctx, b, url, cred, &s.events)
	}
	// Each child said ready once its agent was held in a waiting read:
	// the first whole read is behind it.
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
			wrote0 := s.wrote.Load()
			<-time.After(*streamWindow)
			cpu1, err := cpuTicks(s.pid)
			if err != nil {
				b.Error(err)
				return
			}
			s.cpu = float64(cpu1-cpu0) / 100 / time.Since(start).Seconds() // USER_HZ ticks
			s.bytes = s.wrote.Load() - wrote0
		})
	}
	// The stream: one ~250-byte item every 100 ms, to both agents.
	tick := time.NewTicker(100 * time.Millisecond)
	changes := 0
	for time.Since(start) < *streamWindow {
		<-tick.C
		items = append(items, streamItem(len(items)))
		snap := streamingSnapshot(items)
		var set sync.WaitGroup
		for _, s := range sides {
			set.Go(func() { s.srv.SetSnapshot(snap) }) // the agent encodes its whole snapshot: on both cores
		}
		set.Wait()
		changes++
	}
	tick.Stop()
	wg.Wait()
	b.StopTimer()
	load, _ := os.ReadFile("/proc/loadavg")
	d, w := sides[0], sides[1]
	perChange := func(s *side) float64 { return float64(s.bytes) / float64(changes) }
	b.ReportMetric(d.cpu*100, "deltas_%core")
	b.ReportMetric(w.cpu*100, "whole_%core")
	b.ReportMetric(perChange(d), "deltas_B/change")
	b.ReportMetric(perChange(w), "whole_B/change")
	fmt.Printf("streaming agent (%.1f MiB transcript, %d changes of ~250 bytes in %s, of %d at 100 ms: the agents' own encoding is the limit; a device on each feed, reading each changed conversation: %v), load %s",
		float64(*streamTranscript)/(1<<20), changes, *streamWindow, int(*streamWindow/(100*time.Millisecond)), *streamPage, load)
	for _, s := range sides {
		fmt.Printf("  %-22s bridge %5.2f%% of one core, %9.0f bytes read from the agent per change, %d feed events\n", s.name, s.cpu*100, perChange(s), s.events.Load())
	}
	fmt.Printf("  deltas / whole: CPU %.3fx, bytes per change %.5fx (budgets: under 5%% of a core, at most 16 KiB per change)\n", d.cpu/w.cpu, perChange(d)/perChange(w))
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
// URL, a device credential, its pid and how to stop it.
func startChildBridge(b *testing.B, dir string) (url, cred string, pid int, stop func()) {
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
	return url, cred, cmd.Process.Pid, func() { stdin.Close(); cmd.Wait() }
}

// watchFeed follows a bridge's change feed as a device does, counting its
// events.
func watchFeed(ctx context.Context, b *testing.B, url, cred string, n *atomic.Int64) {
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Errorf("open the change feed: %v %v", err, resp)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		n.Add(1)
		if !*streamPage {
			continue
		}
		var ev device.Event
		json.Unmarshal([]byte(data), &ev)
		for _, ch := range ev.Changes {
			for _, c := range ch.Conversations {
				req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/agents/"+ch.Agent+"/conversations/"+c.ID, nil)
				req.Header.Set("Authorization", "Bearer "+cred)
				if r, err := http.DefaultClient.Do(req); err == nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
			}
		}
	}
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
