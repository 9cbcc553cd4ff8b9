package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
	"github.com/collie-linux/collie/internal/testkit/testenv"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

const (
	oldToken = "0123456789abcdef0123456789abcdef-old-token"
	newToken = "fedcba9876543210fedcba9876543210-new-token"
)

// tlsAgent is a durable agent served over real TLS on loopback.
type tlsAgent struct {
	URL      string
	srv      *http.Server
	requests atomic.Int64
	bytes    *countingListener
	tokens   atomic.Pointer[durable.Tokens]
}

// startTLSAgent serves h (or a real durable agent when h is nil) with cert,
// behind the token check.
func startTLSAgent(t *testing.T, cert tls.Certificate, h http.Handler) *tlsAgent {
	t.Helper()
	a := &tlsAgent{}
	a.tokens.Store(&durable.Tokens{Current: oldToken})
	if h == nil {
		srv, err := durable.NewServer(wire.Hello{Agent: "remote"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		srv.SetSnapshot(demo)
		h = srv.Handler()
	}
	checked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		durable.RequireToken(*a.tokens.Load(), h).ServeHTTP(w, r)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.bytes = &countingListener{Listener: l}
	srv := &http.Server{Handler: checked, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	a.srv = srv
	go srv.ServeTLS(a.bytes, "", "")
	t.Cleanup(func() { srv.Close() })
	a.URL = "https://localhost:" + fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	return a
}

func newClient(t *testing.T, url, token, caFile string, timeout time.Duration) Client {
	t.Helper()
	c, err := NewHTTPS(url, token, HTTPSOptions{CAFile: caFile, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHTTPSGoodAgent(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	var seen []*http.Request
	var mu sync.Mutex
	inner, _ := durable.NewServer(wire.Hello{Agent: "remote"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	inner.SetSnapshot(demo)
	a := startTLSAgent(t, ca.Issue(t, "localhost"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		inner.Handler().ServeHTTP(w, r)
	}))
	c := newClient(t, a.URL+"/", oldToken, ca.File, 0)
	ctx := context.Background()
	if h, err := c.Hello(ctx); err != nil || h.Agent != "remote" {
		t.Fatalf("hello = %+v, %v", h, err)
	}
	rd, err := c.Snapshot(ctx, "")
	if err != nil || rd.Snapshot == nil {
		t.Fatalf("snapshot: %+v %v", rd, err)
	}
	rd2, err := c.Snapshot(ctx, rd.ETag)
	if err != nil || !rd2.NotModified {
		t.Fatalf("K7 second poll: %+v %v, want 304", rd2, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range seen {
		if r.Method != http.MethodGet || r.ContentLength > 0 || r.Header.Get("Authorization") != "Bearer "+oldToken || r.Header.Get(wire.VersionHeader) != "1" {
			t.Errorf("K7 request %s %s: headers %v, length %d", r.Method, r.URL.Path, r.Header, r.ContentLength)
		}
	}
	if got := seen[len(seen)-1].Header.Get("If-None-Match"); got != rd.ETag {
		t.Errorf("K7 If-None-Match = %q, want %q", got, rd.ETag)
	}
}

func TestHTTPSTokens(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	a := startTLSAgent(t, ca.Issue(t, "localhost"), nil)
	ctx := context.Background()
	poll := func(token string) error {
		_, err := newClient(t, a.URL, token, ca.File, 0).Snapshot(ctx, "")
		return err
	}
	refused := func(err error) bool {
		var u *Unreachable
		return errors.As(err, &u) && u.Reason == ReasonTokenRefused
	}
	if err := poll(newToken); !refused(err) {
		t.Fatalf("K6 wrong token: err = %v, want %q", err, ReasonTokenRefused)
	}
	if err := poll(oldToken); err != nil {
		t.Fatalf("K6 current token: %v", err)
	}
	// Rotation: the agent takes the next token while it still takes the old.
	a.tokens.Store(&durable.Tokens{Current: oldToken, Next: newToken})
	if err := poll(oldToken); err != nil {
		t.Fatalf("K6 old token during rotation: %v", err)
	}
	if err := poll(newToken); err != nil {
		t.Fatalf("K6 next token during rotation: %v", err)
	}
	a.tokens.Store(&durable.Tokens{Current: newToken})
	if err := poll(oldToken); !refused(err) {
		t.Fatalf("K6 old token after rotation: err = %v", err)
	}
	if err := poll(newToken); err != nil {
		t.Fatalf("K6 new token after rotation: %v", err)
	}
}

// TestHTTPSRedirectNotFollowed: the other host sees no request, so the
// token never reaches it (K2).
func TestHTTPSRedirectNotFollowed(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	other := startTLSAgent(t, ca.Issue(t, "localhost", "127.0.0.2"), nil)
	l2, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailablef(t, "no 127.0.0.2 on this machine: %v", err)
	}
	l2.Close()
	target := strings.Replace(other.URL, "localhost", "127.0.0.2", 1)
	a := startTLSAgent(t, ca.Issue(t, "localhost"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusFound)
	}))
	_, err = newClient(t, a.URL, oldToken, ca.File, 0).Snapshot(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "never follows redirects") {
		t.Fatalf("err = %v, want a redirect refusal", err)
	}
	if n := other.requests.Load(); n != 0 {
		t.Fatalf("K2: the other host saw %d requests", n)
	}
}

func TestHTTPSBadReplies(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	t.Run("X4_5MiB_body_refused_at_cap", func(t *testing.T) {
		var written atomic.Int64
		a := startTLSAgent(t, ca.Issue(t, "localhost"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			chunk := []byte(strings.Repeat(" ", 64<<10))
			for i := 0; i < 80; i++ {
				n, err := w.Write(chunk)
				written.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		_, err := newClient(t, a.URL, oldToken, ca.File, 0).Snapshot(context.Background(), "")
		if !errors.Is(err, wire.ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
	t.Run("K2_wrong_name", func(t *testing.T) {
		a := startTLSAgent(t, ca.Issue(t, "other.invalid"), nil)
		_, err := newClient(t, a.URL, oldToken, ca.File, 0).Hello(context.Background())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err = %v, want a certificate error", err)
		}
	})
	t.Run("K2_self_signed_without_CA_file", func(t *testing.T) {
		a := startTLSAgent(t, tlstest.SelfSigned(t, "localhost"), nil)
		_, err := newClient(t, a.URL, oldToken, "", 0).Hello(context.Background())
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("err = %v, want a certificate error", err)
		}
		if a.requests.Load() != 0 {
			t.Fatal("a request reached an agent whose certificate was refused")
		}
	})
	t.Run("bad_CA_file", func(t *testing.T) {
		if _, err := NewHTTPS("https://localhost:1", oldToken, HTTPSOptions{CAFile: "/nonexistent/ca.pem"}); err == nil {
			t.Fatal("a missing CA file was accepted")
		}
	})
}

// TestHTTPSIdlePollBytes measures what one idle poll costs on the wire
// once the connection is open: a 304 should be a few hundred bytes (K8).
func TestHTTPSIdlePollBytes(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	a := startTLSAgent(t, ca.Issue(t, "localhost"), nil)
	c := newClient(t, a.URL, oldToken, ca.File, 0)
	ctx := context.Background()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	c.Snapshot(ctx, rd.ETag) // settle the connection
	before := a.bytes.total()
	const polls = 20
	for i := 0; i < polls; i++ {
		if r, err := c.Snapshot(ctx, rd.ETag); err != nil || !r.NotModified {
			t.Fatal(err)
		}
	}
	per := (a.bytes.total() - before) / polls
	t.Logf("one idle poll over HTTPS: %d bytes on the wire (request and 304, TLS included); %d polls a day at 10 s", per, 24*60*60/10)
	if per > 1000 {
		t.Errorf("an idle poll costs %d bytes; a 304 should be a few hundred", per)
	}
}

// countingListener counts the connections it accepts and the bytes they
// carry both ways.
type countingListener struct {
	net.Listener
	n        atomic.Int64
	accepted atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	return &countingConn{Conn: c, n: &l.n}, nil
}

func (l *countingListener) total() int64 { return l.n.Load() }

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestHTTPSTrickleEndedByDeadline_K2: an agent that sends its body a byte
// a second never holds the bridge past the client's deadline: the read
// ends with an error when the 2 s are up, on synctest's clock, over TLS on
// an in-memory connection.
func TestHTTPSTrickleEndedByDeadline_K2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The certificates are made in the bubble, so they are valid at
		// its clock.
		ca := tlstest.NewCA(t, t.TempDir())
		l := memnet.New()
		stop := make(chan struct{}) // closed when the test is done with the agent
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"spaces":[`))
				for range 60 {
					w.(http.Flusher).Flush()
					select {
					case <-time.After(time.Second):
					case <-stop:
						return
					}
					if _, err := w.Write([]byte(" ")); err != nil {
						return
					}
				}
			}),
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}},
		}
		go srv.ServeTLS(l, "", "")
		defer func() {
			close(stop)
			srv.Close()
			synctest.Wait() // the handler and the connections are gone
		}()
		c := newClient(t, "https://localhost:1", oldToken, ca.File, 2*time.Second)
		c.(*reader).hc.Transport.(*httpsTransport).netDial = l.DialContext

		start := time.Now()
		_, err := c.Snapshot(t.Context(), "")
		if err == nil {
			t.Fatal("a body trickling one byte a second was read to the end")
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("the deadline ended a trickling body after %s; it is 2 s", d)
		}
	})
}

// TestRootsSharedPerCA: clients made with one Shared share one pool of
// certificate roots per CA file's contents (a thousand agents behind one
// CA cost one pool, not a thousand copies of the system's roots); another
// CA gets its own pool, which trusts only its own agents beside the
// system's; no CA file means the system's roots, not a copy of them.
func TestRootsSharedPerCA(t *testing.T) {
	ca, other := tlstest.NewCA(t, t.TempDir()), tlstest.NewCA(t, t.TempDir())
	a := startTLSAgent(t, ca.Issue(t, "localhost"), nil)
	var roots Shared
	pool := func(caFile string) (*x509.CertPool, Waiter) {
		t.Helper()
		c, err := NewHTTPS(a.URL, oldToken, HTTPSOptions{CAFile: caFile, Shared: &roots})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.(*reader).hc.Transport.(*httpsTransport).config.RootCAs, c
	}
	p1, c1 := pool(ca.File)
	p2, c2 := pool(ca.File)
	if p1 == nil || p1 != p2 {
		t.Errorf("two clients of one CA file have pools %p and %p, want one shared", p1, p2)
	}
	for _, c := range []Waiter{c1, c2} {
		if _, err := c.Hello(t.Context()); err != nil {
			t.Fatalf("hello through the shared roots: %v", err)
		}
	}
	p3, c3 := pool(other.File)
	if p3 == p1 {
		t.Error("another CA's client shares the first CA's pool")
	}
	if _, err := c3.Hello(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("K2 a client trusting another CA reached the agent: %v", err)
	}
	if p, _ := pool(""); p != nil {
		t.Error("a client with no CA file has a pool of its own; it should use the system's roots as they are")
	}
}

// TestHandshakesTakeTurns: the clients of one Shared make at most its
// limit of TLS handshakes at once; the others wait their turn and then
// connect, none failing for having waited. On synctest's clock, over TLS
// on in-memory connections, with a server that holds each handshake
// until told.
func TestHandshakesTakeTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const clients, limit = 6, 2
		ca := tlstest.NewCA(t, t.TempDir())
		cert := ca.Issue(t, "localhost")
		var (
			mu           sync.Mutex
			inside, most int
		)
		release := make(chan struct{})
		srv, err := durable.NewServer(wire.Hello{Agent: "remote"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		l := memnet.New()
		hs := &http.Server{
			Handler: durable.RequireToken(durable.Tokens{Current: oldToken}, srv.Handler()),
			TLSConfig: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
				mu.Lock()
				inside++
				most = max(most, inside)
				mu.Unlock()
				<-release
				mu.Lock()
				inside--
				mu.Unlock()
				return &cert, nil
			}},
		}
		go hs.ServeTLS(l, "", "")
		defer func() {
			hs.Close()
			synctest.Wait()
		}()
		shared := &Shared{limit: limit}
		errs := make(chan error, clients)
		for range clients {
			c, err := NewHTTPS("https://localhost:1", oldToken, HTTPSOptions{CAFile: ca.File, Shared: shared})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*reader).hc.Transport.(*httpsTransport).netDial = l.DialContext
			go func() {
				_, err := c.Hello(t.Context())
				errs <- err
			}()
		}
		synctest.Wait() // every client is in a handshake or waiting its turn
		mu.Lock()
		if inside != limit {
			t.Errorf("%d handshakes under way at once, want %d", inside, limit)
		}
		mu.Unlock()
		close(release)
		for range clients {
			if err := <-errs; err != nil {
				t.Errorf("a client that waited its turn: %v", err)
			}
		}
		if most != limit {
			t.Errorf("at most %d handshakes at once, want %d", most, limit)
		}
	})
}
