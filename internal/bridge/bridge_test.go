package bridge

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testbuf"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// startAgent serves a real durable agent at path; the func it returns
// stops it (at once; again at cleanup is harmless).
func startAgent(t *testing.T, path, title string) (stop func()) {
	t.Helper()
	l, _, err := durable.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: title}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: title + "\u202e", Tabs: []wire.Tab{}}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

type harness struct {
	paths  config.Paths
	logs   *testbuf.Buffer
	client *control.Client
	notify chan string
}

func start(t *testing.T, srcs ...sources.Source) *harness {
	t.Helper()
	h, _ := startWith(t, func(*Options) {}, srcs...)
	return h
}

// startWith is start with options changed by opt; it returns the bridge too.
func startWith(t *testing.T, opt func(*Options), srcs ...sources.Source) (*harness, *Bridge) {
	t.Helper()
	dir := t.TempDir()
	h := &harness{
		paths:  config.Paths{Config: filepath.Join(dir, "config"), State: filepath.Join(dir, "state"), Runtime: filepath.Join(dir, "run")},
		logs:   &testbuf.Buffer{},
		notify: make(chan string, 100),
	}
	os.Mkdir(h.paths.Runtime, 0o700)
	if err := sources.Save(h.paths.Sources(), sources.File{Version: 1, Sources: srcs}); err != nil {
		t.Fatal(err)
	}
	o := Options{
		Paths:    h.paths,
		UID:      os.Getuid(),
		Log:      slog.New(slog.NewTextHandler(h.logs, nil)),
		Interval: 50 * time.Millisecond,
		Notify:   func(s string) { h.notify <- s },
	}
	opt(&o)
	b := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	h.client = control.NewClient(h.paths.Control())
	return h, b
}

// waitFor polls the daemon's list until ok holds.
func (h *harness) waitFor(t *testing.T, what string, ok func(map[string]view.AgentStatus) bool) map[string]view.AgentStatus {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last map[string]view.AgentStatus
	for ; time.Now().Before(deadline); <-tick.C {
		agents, err := h.client.Agents(context.Background())
		if err == nil {
			last = map[string]view.AgentStatus{}
			for _, a := range agents {
				last[a.Name] = a
			}
			if ok(last) {
				return last
			}
		}
	}
	t.Fatalf("timed out waiting for %s; last: %+v", what, last)
	return nil
}

func TestBridgePollsAndRefuses(t *testing.T) {
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good", "desk", "a.sock")
	bad := filepath.Join(tmp, "bad", "desk", "b.sock")
	startAgent(t, good, "good")
	startAgent(t, bad, "bad")
	h := start(t, sources.Source{Name: "good", Socket: good}, sources.Source{Name: "bad", Socket: bad})

	h.waitFor(t, "both reachable", func(m map[string]view.AgentStatus) bool {
		return m["good"].Reachable && m["bad"].Reachable
	})
	for ready := false; !ready; {
		select {
		case s := <-h.notify:
			ready = strings.HasPrefix(s, "READY=1\nSTATUS=")
		case <-time.After(5 * time.Second):
			t.Fatal("no READY=1 with a STATUS line was sent to systemd")
		}
	}
	shown, err := h.client.View(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if shown[1].Name != "good" || shown[1].Snapshot.Spaces[0].Title != "good" {
		t.Fatalf("X1 view not cleaned or wrong: %+v", shown[1])
	}

	// T4: a path turned unsafe is unreachable at the next poll; the other
	// agent is unaffected.
	desk := filepath.Dir(bad)
	os.Chmod(desk, 0o755)
	want := "the socket's folder " + desk + " has mode 0755, not 0700"
	m := h.waitFor(t, "the bad agent refused", func(m map[string]view.AgentStatus) bool {
		return !m["bad"].Reachable
	})
	if m["bad"].Reason != want || m["bad"].ReasonCode != "folder-mode" {
		t.Fatalf("reason = %q (code %q), want %q (folder-mode)", m["bad"].Reason, m["bad"].ReasonCode, want)
	}
	// Several more polls of both, each seen by its check time moving on.
	for range 3 {
		good, bad := m["good"].Checked, m["bad"].Checked
		m = h.waitFor(t, "one more poll of each agent", func(m map[string]view.AgentStatus) bool {
			return m["good"].Checked.After(good) && m["bad"].Checked.After(bad)
		})
	}
	if !m["good"].Reachable || m["bad"].Reason != want {
		t.Fatalf("after more polls: %+v", m)
	}
	if n := strings.Count(h.logs.String(), "durable agent is unreachable"); n != 1 {
		t.Errorf("logged the same unreachable reason %d times, want once per change:\n%s", n, h.logs)
	}
	shown, _ = h.client.View(context.Background())
	if shown[0].Name != "bad" || shown[0].Snapshot != nil {
		t.Errorf("an unreachable agent's snapshot is still shown: %+v", shown[0])
	}

	os.Chmod(desk, 0o700)
	h.waitFor(t, "the bad agent back", func(m map[string]view.AgentStatus) bool { return m["bad"].Reachable })
}

func TestBridgeReloadAndTighten(t *testing.T) {
	tmp := t.TempDir()
	sock := filepath.Join(tmp, "desk", "a.sock")
	startAgent(t, sock, "a")
	dir := t.TempDir()
	paths := config.Paths{Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	os.Mkdir(paths.Runtime, 0o700)
	if err := sources.Save(paths.Sources(), sources.File{Version: 1}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(paths.Sources(), 0o644)
	logs := &testbuf.Buffer{}
	b := New(Options{Paths: paths, UID: os.Getuid(), Log: slog.New(slog.NewTextHandler(logs, nil)), Interval: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := &harness{paths: paths, logs: logs, client: control.NewClient(paths.Control())}
	h.waitFor(t, "daemon up", func(m map[string]view.AgentStatus) bool { return len(m) == 0 })

	fi, _ := os.Stat(paths.Sources())
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("K5 sources.json mode = %v after start, want 0600", fi.Mode().Perm())
	}
	if n := strings.Count(logs.String(), "sources.json was readable by others"); n != 1 {
		t.Errorf("K5 tighten logged %d lines, want 1", n)
	}

	sources.Update(paths.Sources(), func(f *sources.File) error { return f.Add(sources.Source{Name: "a", Socket: sock}) })
	if err := h.client.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "attached agent reachable", func(m map[string]view.AgentStatus) bool { return m["a"].Reachable })

	sources.Update(paths.Sources(), func(f *sources.File) error { return f.Remove("a") })
	h.client.Reload(context.Background())
	h.waitFor(t, "detached", func(m map[string]view.AgentStatus) bool { return len(m) == 0 })

	os.WriteFile(paths.Sources(), []byte("{broken"), 0o600)
	if err := h.client.Reload(context.Background()); err == nil {
		t.Error("a broken sources.json reloaded without error")
	}
}

// TestBridgeCadenceK8: over real HTTPS, an agent that refuses the token
// shows why (K6). The cadence (K8) is TestBridgeCadenceK8Synctest's.
// Originally: a reachable agent is polled every Interval while no
// device looks and every Active while one does; an agent that refuses the
// token stays at Interval, device or not, and shows why (K6, K8).
func TestBridgeCadenceK8(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	const token = "cadence-token-0123456789abcdef0123456789"
	var goodHits, badHits atomic.Int64
	agent := func(hits *atomic.Int64, accept string) string {
		srv, _ := durable.NewServer(wire.Hello{Agent: "r"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		h := durable.RequireToken(durable.Tokens{Current: accept}, srv.Handler())
		hs := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}},
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); h.ServeHTTP(w, r) })}
		go hs.ServeTLS(l, "", "")
		t.Cleanup(func() { hs.Close() })
		return fmt.Sprintf("https://localhost:%d", l.Addr().(*net.TCPAddr).Port)
	}
	good := agent(&goodHits, token)
	bad := agent(&badHits, "another-token-0123456789abcdef0123456789")

	dir := t.TempDir()
	paths := config.Paths{Config: filepath.Join(dir, "config"), Runtime: filepath.Join(dir, "run")}
	os.Mkdir(paths.Runtime, 0o700)
	sources.Save(paths.Sources(), sources.File{Version: 1, Sources: []sources.Source{
		{Name: "good", URL: good, Token: token, CAFile: ca.File},
		{Name: "bad", URL: bad, Token: token, CAFile: ca.File},
	}})
	const idle, active = 400 * time.Millisecond, 40 * time.Millisecond
	b := New(Options{Paths: paths, UID: os.Getuid(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Interval: idle, Active: active})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	h := &harness{client: control.NewClient(paths.Control())}
	m := h.waitFor(t, "first polls", func(m map[string]view.AgentStatus) bool {
		return m["good"].Reachable && m["bad"].Reason != "" && m["bad"].Reason != "not polled yet"
	})
	if m["bad"].Reason != "the agent refused the token" || m["bad"].ReasonCode != "token-refused" || m["good"].ReasonCode != "" || !m["bad"].TokenSet || m["good"].Target != good {
		t.Fatalf("K6: bad = %+v good = %+v", m["bad"], m["good"])
	}

	if goodHits.Load() == 0 || badHits.Load() == 0 {
		t.Errorf("K7: the agents saw %d and %d requests over HTTPS", goodHits.Load(), badHits.Load())
	}
	// The cadence itself is counted in fake time, where a slow machine
	// cannot change the counts: TestBridgeCadenceK8Synctest.
}
