package bridge

import (
	"bufio"
	"context"
	"crypto/tls"
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
	"runtime"
	"runtime/pprof"
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
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

var (
	loadAgents = flag.Int("load.agents", 1000, "BenchmarkLoadThousand: how many agents")
	loadWindow = flag.Duration("load.window", 60*time.Second, "BenchmarkLoadThousand: how long each phase is measured (at least the 60 s wait, so every held read is renewed once)")
	loadProf   = flag.String("load.prof", "", "BenchmarkLoadThousand: a folder for the bridge's CPU, heap and goroutine profiles of the idle phase")
	loadTrans  = flag.String("load.transport", "socket", "BenchmarkLoadThousand: how the bridge reaches the agents: socket (private Unix sockets) or https (TLS on loopback, each agent its own port)")
)

// loadChildEnv names the folder of the bridge a child process runs.
const loadChildEnv = "COLLIE_LOAD_CHILD"

// Budgets of an idle bridge: 1,000 agents held in waiting reads cost less
// than 1% of one core and 64 MB resident, and one file descriptor per
// agent connection.
const (
	idleCoreBudget = 1.0 // % of one core
	idleRSSBudget  = 64  // MB
	watchBudget    = 10  // % of one core with a device watching
)

// BenchmarkLoadThousand measures what 1,000 attached agents held in
// waiting reads cost the bridge: its share of one core, its resident set
// and its file descriptors, idle and then with a device watching while one
// agent a second changes. The agents are real durable servers on private
// Unix sockets in this process (with -load.transport https, on TLS
// listeners on loopback, read with a token); the bridge, with its device
// API, runs in a child process (this test binary again, TestLoadChild),
// so that its CPU
// time, RSS and descriptors are its own, read from /proc/PID. The
// baseline is the same child measured first with no agent attached, in
// the same run: the figures per agent are the difference.
//
//	go test -run '^$' -bench BenchmarkLoadThousand -benchtime 1x ./internal/bridge
//
// With -load.prof DIR the bridge writes cpu.pprof (the idle phase),
// heap.pprof and goroutine.pprof (at its end) there.
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
	over := "Unix sockets"
	var ca *tlstest.CA
	var cert tls.Certificate
	switch *loadTrans {
	case "socket":
	case "https":
		over = "HTTPS on loopback"
		ca = tlstest.NewCA(b, dir)
		cert = ca.Issue(b, "localhost")
	default:
		b.Fatalf("-load.transport %q: give socket or https", *loadTrans)
	}
	const token = "load-token-0123456789abcdef0123456789abcdef"
	for i := range n {
		name := fmt.Sprintf("a%d", i)
		var l net.Listener
		var t durable.Transport
		var src sources.Source
		if ca == nil {
			sock := filepath.Join(dir, name, "desk", "s.sock")
			if l, _, err = durable.Listen(sock); err != nil {
				b.Fatal(err)
			}
			t, src = durable.Transport{Unchecked: true}, sources.Source{Name: name, Socket: sock}
		} else {
			tl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			l = tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{cert}})
			t = durable.Transport{Remote: true, Tokens: durable.Tokens{Current: token}}
			src = sources.Source{Name: name, URL: fmt.Sprintf("https://localhost:%d", tl.Addr().(*net.TCPAddr).Port), Token: token, CAFile: ca.File}
		}
		srv, err := durable.NewServer(wire.Hello{Agent: fmt.Sprintf("agent-%d", i)}, quiet())
		if err != nil {
			b.Fatal(err)
		}
		srv.SetSnapshot(loadSnapshot(i, 0))
		go func() { srv.ServeTransport(ctx, l, t); done <- struct{}{} }()
		srvs = append(srvs, srv)
		srcs = append(srcs, src)
	}
	defer func() {
		cancel()
		for range n {
			<-done
		}
	}()
	paths := config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")}
	os.MkdirAll(paths.Runtime, 0o700)
	// The baseline: the bridge with no agent.
	if err := sources.Save(paths.Sources(), sources.File{Version: 1}); err != nil {
		b.Fatal(err)
	}

	child := startLoadChild(b, dir)
	defer child.stop()
	base := measureChild(b, child, min(*loadWindow, 10*time.Second))

	if err := sources.Save(paths.Sources(), sources.File{Version: 1, Sources: srcs}); err != nil {
		b.Fatal(err)
	}
	child.send(b, "reload")
	child.expect(b, "held")
	// Every agent is held; let the first reads' garbage go before measuring.
	time.Sleep(5 * time.Second)

	b.ResetTimer()
	if *loadProf != "" {
		child.send(b, "cpu "+filepath.Join(*loadProf, "cpu.pprof"))
		child.expect(b, "ok")
	}
	idle := measureChild(b, child, *loadWindow)
	if *loadProf != "" {
		child.send(b, "cpu-stop")
		child.expect(b, "ok")
		child.send(b, "heap "+filepath.Join(*loadProf, "heap.pprof"))
		child.expect(b, "ok")
		child.send(b, "goroutines "+filepath.Join(*loadProf, "goroutine.pprof"))
		child.expect(b, "ok")
	}

	// collie durable list: every agent read once more beside its held
	// read. The connections those reads made must not stay open.
	// Check waits 5 s at most: give the reads still under way 5 s more.
	child.send(b, "check")
	child.expect(b, "ok")
	time.Sleep(5 * time.Second)
	checkedFDs, checkedKinds, err := openFDs(child.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}

	// A device watches; one agent a second changes.
	req, _ := http.NewRequestWithContext(ctx, "GET", child.url+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+child.cred)
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
	watch := measureChild(b, child, *loadWindow)
	close(stopChurn)
	k := <-churned
	resp.Body.Close()
	b.StopTimer()

	rss := max(idle.rss, watch.rss)
	perAgent := func(a, base int64) float64 { return float64(a-base) / float64(n) }
	b.ReportMetric(idle.cpu*100, "idle_%core")
	b.ReportMetric(watch.cpu*100, "watching_%core")
	b.ReportMetric(float64(rss)/(1<<20), "rss_MB")
	b.ReportMetric(perAgent(int64(idle.fds), int64(base.fds)), "fds/agent")
	fmt.Printf("baseline, no agent: bridge %.2f%% of one core, RSS %.1f MB, %d fds %v, %d goroutines, heap %.1f MB\n",
		base.cpu*100, mb(base.rss), base.fds, base.kinds, base.goroutines, mb(base.heap))
	fmt.Printf("%d agents held in waiting reads over %s, idle %s: bridge %.2f%% of one core (budget %.0f%%: %.2fx), RSS %.1f MB (budget %d MB: %.2fx; %.1f KiB per agent over the baseline), %d fds %v (%.2f per agent over the baseline; %d agent connections), %d goroutines (%.2f per agent), heap %.1f MB (%.1f KiB per agent), stacks %.1f MB (%.1f KiB per agent)\n",
		n, over, *loadWindow, idle.cpu*100, idleCoreBudget, idle.cpu*100/idleCoreBudget, mb(idle.rss), idleRSSBudget, mb(idle.rss)/idleRSSBudget, perAgent(idle.rss, base.rss)/1024,
		idle.fds, idle.kinds, perAgent(int64(idle.fds), int64(base.fds)), idle.kinds["socket"]-base.kinds["socket"],
		idle.goroutines, perAgent(int64(idle.goroutines), int64(base.goroutines)), mb(idle.heap), perAgent(int64(idle.heap), int64(base.heap))/1024,
		mb(idle.stacks), perAgent(idle.stacks, base.stacks)/1024)
	fmt.Printf("5 s after collie durable list (a read of every agent beside its held one): %d fds %v (%.2f per agent over the baseline)\n",
		checkedFDs, checkedKinds, perAgent(int64(checkedFDs), int64(base.fds)))
	fmt.Printf("the same with a device watching and %d changes in %s: bridge %.2f%% of one core (budget %d%%: %.2fx), RSS %.1f MB, %d fds, %d goroutines; %d feed events\n",
		k, *loadWindow, watch.cpu*100, watchBudget, watch.cpu*100/watchBudget, mb(watch.rss), watch.fds, watch.goroutines, len(events))
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// loadChild is the bridge of BenchmarkLoadThousand, in a child process
// that takes commands on its stdin and answers on its stdout.
type loadChild struct {
	cmd       *exec.Cmd
	in        io.WriteCloser
	lines     *bufio.Scanner
	url, cred string
}

func startLoadChild(b *testing.B, dir string) *loadChild {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &loadChild{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
	f := c.expect(b, "ready")
	if len(f) != 3 {
		b.Fatalf("the child bridge said %q", f)
	}
	c.url, c.cred = f[1], f[2]
	return c
}

func (c *loadChild) send(b *testing.B, line string) {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		b.Fatalf("tell the child bridge %q: %v", line, err)
	}
}

// expect reads the child's lines until one starts with word, and returns
// its fields.
func (c *loadChild) expect(b *testing.B, word string) []string {
	for c.lines.Scan() {
		if f := strings.Fields(c.lines.Text()); len(f) > 0 && f[0] == word {
			return f
		}
	}
	b.Fatalf("the child bridge ended before it said %q", word)
	return nil
}

func (c *loadChild) stop() { c.in.Close(); c.cmd.Wait() }

// childStats is what measureChild saw of the bridge over one phase.
type childStats struct {
	cpu        float64 // share of one core
	rss        int64   // largest resident set seen
	fds        int     // open descriptors at the end
	kinds      map[string]int
	goroutines int
	heap       int64 // live heap at the end, after a GC
	stacks     int64 // the goroutines' stacks at the end
}

// measureChild returns what the child's bridge cost over d: its share of
// one core, its largest RSS (sampled each second), and at the end its
// descriptors, goroutines and live heap.
func measureChild(b *testing.B, c *loadChild, d time.Duration) childStats {
	pid := c.cmd.Process.Pid
	cpu0, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var st childStats
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for time.Since(start) < d {
		<-t.C
		if r, err := vmRSS(pid); err == nil {
			st.rss = max(st.rss, r)
		}
	}
	cpu1, err := cpuTicks(pid)
	if err != nil {
		b.Fatal(err)
	}
	const clkTck = 100 // USER_HZ on Linux
	st.cpu = float64(cpu1-cpu0) / clkTck / time.Since(start).Seconds()
	if st.fds, st.kinds, err = openFDs(pid); err != nil {
		b.Fatal(err)
	}
	c.send(b, "stats")
	f := c.expect(b, "stats")
	st.goroutines, _ = strconv.Atoi(f[1])
	st.heap, _ = strconv.ParseInt(f[2], 10, 64)
	st.stacks, _ = strconv.ParseInt(f[3], 10, 64)
	return st
}

// openFDs counts pid's open descriptors, by kind: socket, pipe, file,
// anon_inode:[eventpoll] and so on.
func openFDs(pid int) (int, map[string]int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, nil, err
	}
	kinds := map[string]int{}
	for _, e := range ents {
		to, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		kind := "file"
		switch {
		case strings.HasPrefix(to, "socket:"):
			kind = "socket"
		case strings.HasPrefix(to, "pipe:"):
			kind = "pipe"
		case strings.HasPrefix(to, "anon_inode:"):
			kind = to
		}
		kinds[kind]++
	}
	return len(ents), kinds, nil
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
// says "ready URL CREDENTIAL", and then answers the benchmark's commands,
// one a line on its stdin, until its stdin closes:
//
//	reload           reload sources.json; says "held" once every agent is held in a waiting read
//	check            reads every agent once more, as collie durable list does; says "ok"
//	stats            says "stats GOROUTINES HEAP STACKS" (the live heap after a GC and the goroutines' stacks, in bytes)
//	cpu FILE         starts a CPU profile into FILE; says "ok"
//	cpu-stop         stops it; says "ok"
//	heap FILE        writes a heap profile (after a GC); says "ok"
//	goroutines FILE  writes a goroutine profile; says "ok"
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

	fmt.Printf("ready %s %s\n", hs.URL, cred)
	var cpu *os.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() { // until the benchmark closes it
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		arg := ""
		if len(f) > 1 {
			arg = f[1]
		}
		switch f[0] {
		case "reload":
			if err := br.Reload(); err != nil {
				t.Fatal(err)
			}
			waitHeld(t, br)
			fmt.Println("held")
		case "check":
			br.Check(context.Background())
			fmt.Println("ok")
		case "stats":
			heap := heapAfterGC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Printf("stats %d %d %d\n", runtime.NumGoroutine(), heap, m.StackInuse)
		case "cpu":
			if cpu, err = os.Create(arg); err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(cpu); err != nil {
				t.Fatal(err)
			}
			fmt.Println("ok")
		case "cpu-stop":
			pprof.StopCPUProfile()
			cpu.Close()
			fmt.Println("ok")
		case "heap", "goroutines":
			name := map[string]string{"heap": "heap", "goroutines": "goroutine"}[f[0]]
			runtime.GC()
			w, err := os.Create(arg)
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.Lookup(name).WriteTo(w, 0); err != nil {
				t.Fatal(err)
			}
			w.Close()
			fmt.Println("ok")
		}
	}
}

// waitHeld waits until every agent of br is held in a waiting read.
func waitHeld(t *testing.T, br *Bridge) {
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
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d agents held in waiting reads after 2 minutes", held, len(all))
		}
	}
}
