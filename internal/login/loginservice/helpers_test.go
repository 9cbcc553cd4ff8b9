package loginservice

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/testkit/testbuf"
)

// clock is the injected clock: it moves only when a test moves it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

var epoch = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fixture struct {
	t     *testing.T
	path  string
	clock *clock
	logs  *testbuf.Buffer
	s     *Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "collie", "agent-sessions.json"), clock: &clock{t: epoch}, logs: &testbuf.Buffer{}}
	f.s = f.open()
	return f
}

// open opens the fixture's file again, as a restarted bridge does.
func (f *fixture) open() *Store {
	f.t.Helper()
	s, err := Open(Options{Path: f.path, Now: f.clock.Now, Log: slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	return s
}

// restart replaces the store with a fresh Open of its file.
func (f *fixture) restart() { f.s = f.open() }

var alice = Identity{Agent: "agent-alice", Server: "srv.1", App: "inst_42"}
var bob = Identity{Agent: "agent-bob", Server: "srv.1", App: "inst_42"}

// newVerifier is a fresh RFC 7636 verifier, as the CLI makes one.
func newVerifier() string {
	b := make([]byte, 64)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// grant issues a grant for id and returns it with its verifier.
func (f *fixture) grant(id Identity) (grant, verifier string) {
	f.t.Helper()
	verifier = newVerifier()
	g, _, err := f.s.Grant(id, loginwire.Challenge(verifier))
	if err != nil {
		f.t.Fatalf("Grant: %v", err)
	}
	return g, verifier
}

// login is a whole login for id.
func (f *fixture) login(id Identity) Tokens {
	f.t.Helper()
	g, v := f.grant(id)
	tok, err := f.s.Exchange(g, v)
	if err != nil {
		f.t.Fatalf("Exchange: %v", err)
	}
	return tok
}

// wantCode fails unless err is an *Error with code and its status.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("err = %v, want none", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want an *Error with code %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%s), want %s", e.Code, e.Message, code)
	}
	want := map[string]int{loginwire.CodeInvalid: 400, loginwire.CodeBindingMismatch: 400, loginwire.CodeGrantProofMismatch: 400,
		loginwire.CodeExpired: 409, loginwire.CodeConsumed: 409, loginwire.CodeTemporarilyUnavailable: 503}[code]
	if e.Status != want {
		t.Fatalf("status of %s = %d, want %d", code, e.Status, want)
	}
	if e.Message == "" || e.Error() != e.Message {
		t.Fatalf("message %q, Error() %q", e.Message, e.Error())
	}
}

// failingWrite makes the store's writes fail while *fail is set.
func failingWrite(s *Store, fail *bool) {
	w := s.write
	s.write = func(path string, data []byte) error {
		if *fail {
			return errors.New("disk full")
		}
		return w(path, data)
	}
}
