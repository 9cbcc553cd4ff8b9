package bridge

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

var (
	loadAgents = flag.Int("load.agents", 1000, "BenchmarkLoadThousand: how many agents")
	loadWindow = flag.Duration("load.window", 60*time.Second, "BenchmarkLoadThousand: how long each phase is measured (at least the 60 s wait, so every held read is renewed once)")
)

// loadChildEnv names the folder of the bridge a child process runs.
const loadChildEnv = "COLLIE_LOAD_CHILD"

// BenchmarkLoadThousand measures what 1,000 attached agents held in
// waiting reads cost the bridge (under 2% of one core idle,
// under 10% with a device watching, RSS under 100 MB). The agents are
// real durable servers on private Unix sockets in this process; the
// bridge, with its device API, runs in a child process (this test binary
// again, TestLoadChild), so that its CPU time and RSS are its own, read
// from /proc/PID/stat and /proc/PID/status. Phases of load.window each:
// idle, then a device watching the change feed while one agent a second
// changes somewhere in the fleet.
//
//	go test -run '^$' -bench BenchmarkLoadThousand -benchtime 1x ./internal/bridge
func BenchmarkLoadThousand(b *testing.B) {
	n := *loadAgents
	dir, err := os.MkdirTemp("", "cl") // short: socket paths fit sun_path
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var srvs []*durable.Server
	var srcs []sources.Source
	done := make(chan struct{}, n)
	for i := range n {
		sock := filepath.Join(dir, fmt.Sprintf("a%d", i), "desk", "s.sock")
		l, _, err := durable.Listen(sock)
		if err != nil {
			b.Fatal(err)
		}
		srv, err := durable.NewServer(wire.Hello{Agent: fmt.Sprintf("agent-%d", i)}, quiet())
		if err != nil {
			b.Fatal(err)
		}
		srv.SetSnapshot(loadSnapshot(i, 0))
		go func() { srv.ServeTransport(ctx, l, durable.Transport{Unchecked: true}); done <- struct{}{} }()
		srvs = append(srvs, srv)
		srcs = append(srcs, sources.Source{Name: fmt.Sprintf("a%d", i), Socket: sock})
	}
	defer func() {
		cancel()
		for range n {
			<-done
		}
	}()
	paths := config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")}
	os.MkdirAll(paths.Runtime, 0o700)
	if err := sources.Save(paths.Sources(), sources.File{Version: 1, Sources: srcs}); err != nil {
		b.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	var url, cred string
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
	pid := cmd.Process.Pid
	time.Sleep(5 * time.Second) // the first reads settle

	b.ResetTimer()
	idleCPU, idleRSS := measureChild(b, pid, *loadWindow)

	// A device watches; one agent a second changes.
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("open the change feed: %v %v", err, resp)
	}
	events := make(chan struct{}, 1024)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				select {
				case events <- struct{}{}:
				default:
				}
			}
		}
	}()
	stopChurn := make(chan struct{})
	churned := make(chan int)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		k := 0
		for {
			select {
			case <-stopChurn:
				churned <- k
				return
			case <-t.C:
				k++
				i := rand.N(n)
				srvs[i].SetSnapshot(loadSnapshot(i, k))
			}
		}
	}()
	watchCPU, watchRSS := measureChild(b, pid, *loadWindow)
	close(stopChurn)
	k := <-churned
	resp.Body.Close()
	b.StopTimer()

	rss := max(idleRSS, watchRSS)
	b.ReportMetric(idleCPU*100, "idle_%core")
	b.ReportMetric(watchCPU*100, "watching_%core")
	b.ReportMetric(float64(rss)/(1<<20), "rss_MB")
	fmt.Printf("%d agents held in waiting reads over Unix sockets: bridge %.2f%% of one core idle (budget 2%%: %.2fx), %.2f%% with a device watching and %d changes in %s (budget 10%%: %.2fx), RSS %.1f MB (budget 100 MB: %.2fx; %.1f KiB per agent); %d feed events\n",
		n, idleCPU*100, idleCPU*100/2, watchCPU*100, k, *loadWindow, watchCPU*100/10, float64(rss)/(1<<20), float64(rss)/(100<<20), float64(rss)/1024/float64(n), len(events))
}

// loadSnapshot is agent i's state at its k-th change: one conversation
// with a few items.
func loadSnapshot(i, k int) *wire.Snapshot {
	items := []wire.Item{}
	for j := range 4 {
		items = append(items, wire.Item{ID: fmt.Sprintf("i%d", j), Kind: wire.KindText, Role: "agent", Text: fmt.Sprintf("agent %d says %d/%d: building, testing, deploying", i, k, j)})
	}
	conv := wire.Conversation{ID: "main", Title: "Main", Items: items}
	return &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Space", Tabs: []wire.Tab{{ID: "t", Title: "Tab", Conversations: []wire.Conversation{conv}}}}}}
}

// measureChild returns the share of one core process pid used over d, and
// its largest RSS seen (sampled each second).
func measureChild(b *testing.B, pid int, d time.Duration) (float64, int64) {
	cpu0, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var rss int64
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for time.Since(start) < d {
		<-t.C
		if r, err := vmRSS(pid); err == nil {
			rss = max(rss, r)
		}
	}
	cpu1, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	const clkTck = 100 // USER_HZ on Linux
	return float64(cpu1-cpu0) / clkTck / time.Since(start).Seconds(), rss
}

// cpuTicks is utime + stime of pid, in clock ticks (proc(5)).
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after "pid (comm) "
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read /proc/%d/stat: %q", pid, s)
	}
	return ut + st, nil
}

// vmRSS is the resident set of pid, in bytes.
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestLoadChild is the bridge side of BenchmarkLoadThousand, run in a child
// process; it skips unless that benchmark started it. It runs the real
// bridge on the folder the benchmark made, with a device API on httptest,
// says "ready URL CREDENTIAL" once every agent is held in a waiting read,
// and runs until its stdin closes.
func TestLoadChild(t *testing.T) {
	dir := os.Getenv(loadChildEnv)
	if dir == "" {
		t.Skip("the bridge side of BenchmarkLoadThousand; run by it")
	}
	paths := config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")}
	st, err := store.OpenStore(filepath.Join(paths.State, "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	var api *device.API
	br := New(Options{Paths: paths, UID: os.Getuid(), Log: quiet(), Changed: func() { api.Changed() }})
	var handler http.Handler
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	host, port, _ := net.SplitHostPort(hs.Listener.Addr().String())
	api = device.NewAPI(device.Options{Backend: br, Store: st, Pairings: store.NewPairings(nil), Log: quiet(), Site: policy.NewSite("http", host, port)})
	handler = api.Handler()
	hs.Start()
	defer func() { hs.CloseClientConnections(); hs.Close(); api.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- br.Run(ctx) }()
	defer func() { cancel(); <-runDone }()

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(2 * time.Minute); ; <-tick.C {
		held, all := 0, br.Agents()
		for _, a := range all {
			if a.Reachable && a.Mode == modeWaiting {
				held++
			}
		}
		if len(all) > 0 && held == len(all) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d agents held in waiting reads after 2 minutes", held, len(all))
		}
	}
	fmt.Printf("ready %s %s\n", hs.URL, cred)
	io.Copy(io.Discard, os.Stdin) // until the benchmark closes it
}
