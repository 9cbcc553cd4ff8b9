package bridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// latencyQuestions is how many questions each case asks (at
// least 200).
const latencyQuestions = 200

// latencyBudget is the p99 a question may take to reach a device, in ms.
const latencyBudget = 10

var latencyAgents = flag.Int("latency.agents", 20, "BenchmarkQuestionLatency: how many agents; each question goes to one of them at random")

// BenchmarkQuestionLatency measures how long a question an agent asks
// takes to show on a device (p99 <= 10 ms): 20 real reference agents
// (durable server and board; -latency.agents) over private Unix sockets and over
// HTTPS (a certificate of internal/testkit/tlstest), the real bridge with its
// waiting reads, and the device API's change feed served by httptest. With
// a device watching, the time is until the feed's event reaches the
// device; with none (no event stream open, K8's idle state), until the
// bridge holds the question and has told the device API. Questions are
// 150 to 350 ms apart, each in one of the agents chosen at random, as
// agents ask them, not as fast as they can. It prints p50 and p99 and the
// ratio of p99 to the 10 ms budget, and beside them its baseline, measured
// halfway between each two questions: a bare wakeup over the same kind of
// connection (wakeProbe), which shows how much of a slow run's tail is the
// machine's.
//
//	go test -run '^$' -bench BenchmarkQuestionLatency ./internal/bridge
func BenchmarkQuestionLatency(b *testing.B) {
	for _, tr := range []string{"socket", "https"} {
		for _, watching := range []bool{true, false} {
			name := tr + "/no_device"
			if watching {
				name = tr + "/device_watching"
			}
			b.Run(name, func(b *testing.B) {
				lat := measureLatency(b, tr, watching)
				slices.Sort(lat)
				p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
				b.ReportMetric(ms(p50), "p50_ms")
				b.ReportMetric(ms(p99), "p99_ms")
				b.ReportMetric(ms(p99)/latencyBudget, "x_budget")
				fmt.Printf("question -> %s over %s, %d agents: %d questions, p50 %.1f ms, p99 %.1f ms, max %.1f ms (budget p99 %d ms: %.2fx), load %s\n",
					map[bool]string{true: "device feed", false: "bridge (no device)"}[watching], tr, *latencyAgents, len(lat), ms(p50), ms(p99), ms(lat[len(lat)-1]), latencyBudget, ms(p99)/latencyBudget, testenv.Load())
			})
		}
	}
}

// gcCount is how many garbage collections have ended, read without
// stopping the world.
func gcCount() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// wakeProbe is the latency benchmark's baseline: one byte written to a
// connection of the same kind as the agents' (a Unix socket, or TLS over
// loopback TCP), and the time until a goroutine blocked reading its other
// end has it. A question's way to a device takes at least a few of these.
type wakeProbe struct {
	w, r net.Conn
	got  chan time.Time
}

func newWakeProbe(tb testing.TB, tr string, ca *tlstest.CA) *wakeProbe {
	tb.Helper()
	var l net.Listener
	var err error
	dial := net.Dial
	if tr == "socket" {
		l, err = net.Listen("unix", filepath.Join(tb.TempDir(), "probe.sock"))
	} else {
		var tl net.Listener
		if tl, err = net.Listen("tcp", "127.0.0.1:0"); err == nil {
			l = tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{ca.Issue(tb, "localhost")}})
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca.PEM)
			dial = func(network, addr string) (net.Conn, error) {
				return tls.Dial(network, addr, &tls.Config{RootCAs: roots, ServerName: "localhost"})
			}
		}
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if tc, ok := c.(*tls.Conn); ok && err == nil {
			err = tc.Handshake()
		}
		if err != nil {
			c = nil
		}
		accepted <- c
	}()
	w, err := dial(l.Addr().Network(), l.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	r := <-accepted
	if r == nil {
		tb.Fatal("the probe's listener accepted nothing")
	}
	p := &wakeProbe{w: w, r: r, got: make(chan time.Time, 1)}
	go func() {
		var one [1]byte
		for {
			if _, err := r.Read(one[:]); err != nil {
				close(p.got)
				return
			}
			p.got <- time.Now()
		}
	}()
	p.once(tb) // the TLS handshake, done before anything is timed
	return p
}

// once writes a byte and returns how long until the reader had it.
func (p *wakeProbe) once(tb testing.TB) time.Duration {
	sent := time.Now()
	if _, err := p.w.Write([]byte{1}); err != nil {
		tb.Fatalf("the probe: %v", err)
	}
	at, ok := <-p.got
	if !ok {
		tb.Fatal("the probe's reader ended")
	}
	return at.Sub(sent)
}

func (p *wakeProbe) close() { p.w.Close(); p.r.Close() }

// measureLatency runs one case and returns each question's latency.
func measureLatency(b *testing.B, tr string, watching bool) []time.Duration {
	tmp := b.TempDir()
	quietLog := quiet()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ca *tlstest.CA
	if tr != "socket" {
		ca = tlstest.NewCA(b, tmp)
	}
	n := *latencyAgents
	boards := make([]*board.Board, n)
	srcs := make([]sources.Source, n)
	served := make(chan struct{}, n)
	for i := range n {
		name := fmt.Sprintf("lat%d", i)
		srv, err := durable.NewServer(wire.Hello{Agent: name}, quietLog)
		if err != nil {
			b.Fatal(err)
		}
		o := board.Options{Space: wire.Space{ID: "s", Title: "Space"}, Tab: wire.Space{ID: "t", Title: "Tab"}, Log: quietLog}
		o.Main.ID, o.Main.Title = "main", "Main"
		bd, err := board.New(srv, o)
		if err != nil {
			b.Fatal(err)
		}
		defer bd.Stop()
		boards[i] = bd

		var l net.Listener
		var t durable.Transport
		switch tr {
		case "socket":
			sock := filepath.Join(tmp, "run", name, "desk", "lat.sock")
			if l, _, err = durable.Listen(sock); err != nil {
				b.Fatal(err)
			}
			srcs[i], t = sources.Source{Name: name, Socket: sock}, durable.Transport{Unchecked: true}
		default:
			tl, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			l = tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{ca.Issue(b, "localhost")}})
			const token = "latency-token-0123456789abcdef0123456789ab"
			srcs[i] = sources.Source{Name: name, URL: fmt.Sprintf("https://localhost:%d", tl.Addr().(*net.TCPAddr).Port), Token: token, CAFile: ca.File}
			t = durable.Transport{Remote: true, Tokens: durable.Tokens{Current: token}}
		}
		go func() { srv.ServeTransport(ctx, l, t); served <- struct{}{} }()
	}
	defer func() {
		cancel()
		for range n {
			<-served
		}
	}()

	// The bridge, and the device API it tells of changes.
	paths := config.Paths{Config: filepath.Join(tmp, "config"), State: filepath.Join(tmp, "state"), Runtime: filepath.Join(tmp, "crun")}
	os.MkdirAll(paths.Runtime, 0o700)
	if err := sources.Save(paths.Sources(), sources.File{Version: 1, Sources: srcs}); err != nil {
		b.Fatal(err)
	}
	st, err := store.OpenStore(filepath.Join(paths.State, "devices.json"), nil)
	if err != nil {
		b.Fatal(err)
	}
	_, cred, err := st.Add("phone")
	if err != nil {
		b.Fatal(err)
	}
	var api *device.API
	atBridge := make(chan time.Time, 64)
	br := New(Options{Paths: paths, UID: os.Getuid(), Log: quietLog, Changed: func() {
		api.Changed()
		select {
		case atBridge <- time.Now():
		default:
		}
	}})
	var handler http.Handler
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	host, port, _ := net.SplitHostPort(hs.Listener.Addr().String())
	api = device.NewAPI(device.Options{Backend: br, Store: st, Pairings: store.NewPairings(nil), Log: quietLog, Site: policy.NewSite("http", host, port)})
	handler = api.Handler()
	hs.Start()
	defer func() { hs.CloseClientConnections(); hs.Close(); api.Close() }()
	runDone := make(chan error, 1)
	go func() { runDone <- br.Run(ctx) }()
	defer func() { cancel(); <-runDone }()
	waitModeAll(b, br, n, modeWaiting)

	// The device's change feed: the time each event reached it.
	atDevice := make(chan time.Time, 64)
	if watching {
		req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := hs.Client().Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("open the change feed: %v %v", err, resp)
		}
		defer resp.Body.Close()
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"changes"`) {
					atDevice <- time.Now()
				}
			}
		}()
	}
	seen := atBridge
	if watching {
		seen = atDevice
	}
	drain := func() {
		for {
			select {
			case <-atBridge:
			case <-atDevice:
			default:
				return
			}
		}
	}
	lat := make([]time.Duration, 0, latencyQuestions)
	gcs := make([]bool, 0, latencyQuestions) // a GC ran while the question travelled
	// Where each question's time went: until Pose returned (the agent's
	// side) and until the bridge held it.
	type stages struct{ posed, held time.Duration }
	split := make([]stages, 0, latencyQuestions)
	probe := newWakeProbe(b, tr, ca)
	defer probe.close()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	b.ResetTimer()
	bare := make([]time.Duration, 0, latencyQuestions)
	for i := range latencyQuestions {
		// Halfway to the question, the baseline: a bare wakeup over the
		// same kind of connection, after the same kind of idle.
		gap := 150*time.Millisecond + rand.N(200*time.Millisecond)
		time.Sleep(gap / 2)
		bare = append(bare, probe.once(b))
		time.Sleep(gap - gap/2)
		drain()
		gc0 := gcCount()
		asked := time.Now()
		if _, err := boards[rand.N(n)].Pose("main", wire.AskRequest{RequestID: fmt.Sprintf("ask-%d", i), Kind: wire.AskYesNo, Title: fmt.Sprintf("Deploy %d?", i)}); err != nil {
			b.Fatal(err)
		}
		posed := time.Since(asked)
		select {
		case at := <-seen:
			lat = append(lat, at.Sub(asked))
			gcs = append(gcs, gcCount() != gc0)
			held := at.Sub(asked)
			if watching {
				select {
				case hb := <-atBridge:
					held = hb.Sub(asked)
				case <-time.After(time.Second):
				}
			}
			split = append(split, stages{posed, held})
		case <-time.After(15 * time.Second):
			b.Fatalf("question %d did not show within 15 s", i)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&m1)
	// Which of the slowest questions met a garbage collection, and how
	// much the whole process allocated per question.
	order := make([]int, len(lat))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return int(lat[j] - lat[i]) })
	slow, slowGC, allGC := len(lat)/20, 0, 0
	var slowPosed, slowHeld, slowAll time.Duration
	for k, i := range order {
		if k < slow {
			slowPosed += split[i].posed
			slowHeld += split[i].held
			slowAll += lat[i]
		}
		if gcs[i] {
			allGC++
			if k < slow {
				slowGC++
			}
		}
	}
	slices.Sort(lat)
	slices.Sort(bare)
	q99, b99 := lat[len(lat)*99/100], bare[len(bare)*99/100]
	fmt.Printf("  baseline, a bare wakeup over %s halfway between the questions: p50 %.2f ms, p99 %.2f ms, max %.1f ms; the questions' p99 is %.1fx the baseline's\n",
		tr, ms(bare[len(bare)/2]), ms(b99), ms(bare[len(bare)-1]), float64(q99)/float64(b99))
	fmt.Printf("  the slowest %d questions, on average: %.1f ms in all, %.1f ms until the agent posed it, %.1f ms until the bridge held it\n",
		slow, ms(slowAll)/float64(slow), ms(slowPosed)/float64(slow), ms(slowHeld)/float64(slow))
	fmt.Printf("  %d GCs (%.1f KiB allocated per question); %d of the slowest %d questions and %d of all %d met one; GC pauses %.1f ms in all\n",
		m1.NumGC-m0.NumGC, float64(m1.TotalAlloc-m0.TotalAlloc)/1024/float64(len(lat)), slowGC, slow, allGC, len(lat), float64(m1.PauseTotalNs-m0.PauseTotalNs)/1e6)
	return lat
}

// waitModeAll waits until the bridge reads all n of its agents in mode.
func waitModeAll(tb testing.TB, br *Bridge, n int, mode string) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		in := 0
		st := br.Agents()
		for _, a := range st {
			if a.Reachable && a.Mode == mode {
				in++
			}
		}
		if len(st) == n && in == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d agents in mode %q after 30 s", in, n, mode)
		}
	}
}
