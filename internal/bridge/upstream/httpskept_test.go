//go:build linux

package upstream

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// httpsConns is how many connections the HTTPS client c has open.
func httpsConns(c Waiter) int {
	p := c.(*reader).hc.Transport.(*httpsTransport).pool
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// TestHTTPSKeepsOneConnection_K8: over HTTPS, as over a socket, the bridge
// keeps one connection to an agent and reads it again and again over it
// (one TLS handshake, not one per read); a request beside a held waiting
// read connects anew and closes that connection when done; a connection
// the agent closed while it was idle is not reused, and the read after it
// goes over a new one without an error.
func TestHTTPSKeepsOneConnection_K8(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	inner, err := durable.NewServer(wire.Hello{Agent: "remote"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	inner.SetSnapshot(demo)
	a := startTLSAgent(t, ca.Issue(t, "localhost"), inner.Handler())
	c := newClient(t, a.URL, oldToken, ca.File, 0).(Waiter)
	defer c.Close()
	ctx := t.Context()

	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if r, err := c.Snapshot(ctx, rd.ETag); err != nil || !r.NotModified {
			t.Fatalf("read: %+v %v", r, err)
		}
	}
	if n := a.bytes.accepted.Load(); n != 1 {
		t.Fatalf("21 reads made %d connections, want 1 kept alive", n)
	}

	// A waiting read held at the agent, and a hello beside it.
	held := make(chan error, 1)
	before := a.requests.Load()
	go func() {
		r, err := c.SnapshotWait(ctx, rd.ETag, time.Minute)
		if err == nil && r.NotModified {
			err = io.ErrUnexpectedEOF
		}
		held <- err
	}()
	waitFor(t, "the waiting read at the agent", func() bool { return a.requests.Load() > before })
	if _, err := c.Hello(ctx); err != nil {
		t.Fatal(err)
	}
	if n := httpsConns(c); n != 1 {
		t.Errorf("%d connections open beside the held read once the hello returned, want 1 (the held read's)", n)
	}
	changed := *demo
	changed.Belt = []wire.Button{{ID: "b", Label: "Go"}}
	if err := inner.SetSnapshot(&changed); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil {
		t.Fatalf("the held read: %v", err)
	}
	if n := a.bytes.accepted.Load(); n != 2 {
		t.Errorf("%d connections made in all, want 2 (the kept one and the hello's)", n)
	}

	// The agent closes its idle connections: the next read connects anew.
	waitFor(t, "the agent to close the idle connection", func() bool {
		a.srv.SetKeepAlivesEnabled(false) // closes the connections idle at the agent by now
		p := c.(*reader).hc.Transport.(*httpsTransport).pool
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.idle == nil || !p.idle.alive(time.Now())
	})
	a.srv.SetKeepAlivesEnabled(true)
	if _, err := c.Snapshot(ctx, ""); err != nil {
		t.Fatalf("the read after the agent closed the kept connection: %v", err)
	}
	if n := a.bytes.accepted.Load(); n != 3 {
		t.Errorf("%d connections made in all, want 3", n)
	}
}

// waitFor polls cond every millisecond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		<-tick.C
	}
}

// TestHTTPSHeldReadsHoldNothingButTheirCaller_K8: a waiting read held at
// an agent over HTTPS costs the bridge the goroutine that asked for it and
// one connection, as over a socket: no transport goroutines (net/http
// keeps two per connection). The agent here is the test's own: its
// goroutines end once each connection's first read is answered, and the
// test's goroutine takes the held reads, so that every goroutine counted
// is the client's.
func TestHTTPSHeldReadsHoldNothingButTheirCaller_K8(t *testing.T) {
	const n = 50
	ca := tlstest.NewCA(t, t.TempDir())
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}})
	type agentConn struct {
		net.Conn
		br *bufio.Reader
	}
	var (
		mu    sync.Mutex
		conns []agentConn
		wg    sync.WaitGroup // one per connection until its first request is answered
	)
	wg.Add(n)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	readRequest := func(br *bufio.Reader) error {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return err
			}
			if line == "\r\n" {
				return nil
			}
		}
	}
	notModified := "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n" + wire.WaitedHeader + ": 60\r\n\r\n"
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer wg.Done()
				ac := agentConn{c, bufio.NewReader(c)}
				mu.Lock()
				conns = append(conns, ac)
				mu.Unlock()
				// The first read is answered at once, with no wait.
				if readRequest(ac.br) == nil {
					io.WriteString(c, "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\n")
				}
			}()
		}
	}()
	url := "https://localhost:" + strings.TrimPrefix(tl.Addr().String(), "127.0.0.1:")
	clients := make([]Waiter, n)
	for i := range clients {
		clients[i] = newClient(t, url, oldToken, ca.File, 0).(Waiter)
		if _, err := clients[i].Snapshot(t.Context(), `"e"`); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait() // the agent's goroutines are gone
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g0 := runtime.NumGoroutine()
	done := make(chan error, n)
	for _, c := range clients {
		go func() {
			_, err := c.SnapshotWait(ctx, `"e"`, time.Minute)
			done <- err
		}()
	}
	// The second reads, taken by this goroutine: held.
	for _, c := range conns {
		if err := readRequest(c.br); err != nil {
			t.Fatalf("read the waiting read: %v", err)
		}
	}
	perRead := float64(runtime.NumGoroutine()-g0) / n
	t.Logf("%d reads held over HTTPS: %.2f goroutines each", n, perRead)
	if perRead > 1.05 {
		t.Errorf("%.2f goroutines per held read over HTTPS, want 1 (the caller's)", perRead)
	}
	mu.Lock()
	for _, c := range conns {
		io.WriteString(c, notModified)
	}
	mu.Unlock()
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		if got := httpsConns(c); got != 1 {
			t.Errorf("a client has %d connections open after its held read returned, want 1", got)
		}
		c.Close()
	}
}

var _ http.RoundTripper = (*httpsTransport)(nil)

// TestHTTPSBytesAfterReplyNotTakenForTheNext: an agent that sends more
// than its reply (here a second, made-up reply in the same TLS record,
// past the end of what the client's buffer read) never has those bytes
// taken as the reply to the next request: the connection is closed, and
// the next read goes over a new one.
func TestHTTPSBytesAfterReplyNotTakenForTheNext(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// One write is one record (no small records at a connection's start).
	l := tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}, DynamicRecordSizingDisabled: true})
	t.Cleanup(func() { l.Close() })
	// The first connection's reply is exactly as long as the client's
	// read buffer (4 KiB), and a forged reply follows it in one write.
	head := "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\nX-Pad: "
	first := head + strings.Repeat("a", 4096-len(head)-4) + "\r\n\r\n"
	forged := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	go func() {
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if i == 0 {
						io.WriteString(c, first+forged)
					} else {
						io.WriteString(c, "HTTP/1.1 304 Not Modified\r\nETag: \"e\"\r\n\r\n")
					}
				}
			}()
		}
	}()
	url := "https://localhost:" + strings.TrimPrefix(tl.Addr().String(), "127.0.0.1:")
	c := newClient(t, url, oldToken, ca.File, 0).(Waiter)
	defer c.Close()
	for i := range 2 {
		rd, err := c.Snapshot(t.Context(), `"e"`)
		if err != nil || !rd.NotModified {
			t.Fatalf("read %d: %+v, %v; want not modified (the forged reply was taken)", i+1, rd, err)
		}
	}
}
