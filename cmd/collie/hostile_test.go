package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/hostiletest"
)

// pwn is what a hostile agent would like to reach the user's terminal.
const pwn = hostiletest.Pwn

// assertTerminalSafe fails when out holds a control character other than
// newline (and tab, where allowed), or a direction, invisible or format
// character (X1).
func assertTerminalSafe(t *testing.T, what, out string, tabs bool) {
	t.Helper()
	clean := sanitize.Terminal(out)
	if !tabs {
		clean = strings.ReplaceAll(clean, "\t", "")
	}
	if clean != out {
		t.Errorf("X1: %s writes what a terminal must not see:\n%q", what, out)
	}
}

// serveHostile answers every request on a private socket at path with a
// hostile status line and error body.
func serveHostile(t *testing.T, path string) {
	t.Helper()
	body := `{"error":{"code":"x` + pwn + `","message":"m \u001b[2J\u202e\udb40\udc41"}}`
	reply := hostiletest.Reply("500 "+pwn, "", body)
	hostiletest.Serve(t, path, func(string) string { return reply })
}

// hostileEnv sets up XDG folders with one hostile agent attached.
func hostileEnv(t *testing.T) config.Paths {
	t.Helper()
	run, err := os.MkdirTemp("", "ch-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	os.Chmod(run, 0o700)
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	paths, err := config.FromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(run, "desk", "evil.sock")
	serveHostile(t, sock)
	if err := sources.Save(paths.Sources(), sources.File{Version: 1, Sources: []sources.Source{{Name: "evil", Socket: sock}}}); err != nil {
		t.Fatal(err)
	}
	return paths
}

func runCollie(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("collie %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// TestHostileAgentCLI_X1: the status line and error body of a hostile
// agent reach collie durable list and collie show clean, with the daemon
// running and without it.
func TestHostileAgentCLI_X1(t *testing.T) {
	paths := hostileEnv(t)

	// Without a daemon, collie durable list checks the agent itself.
	out, errOut := runCollie(t, "durable", "list")
	assertTerminalSafe(t, "durable list (no daemon)", out+errOut, false)
	if !strings.Contains(out, "unreachable: the agent answered 500 Internal Server Error") {
		t.Errorf("durable list does not say what the agent answered:\n%s", out)
	}

	ready := make(chan struct{})
	notify := func(s string) {
		if strings.HasPrefix(s, "READY=1") {
			close(ready)
		}
	}
	b := bridge.New(bridge.Options{Paths: paths, UID: os.Getuid(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Notify: notify})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the daemon stopped: %v", err)
	}
	for _, args := range [][]string{{"durable", "list"}, {"durable", "list", "--json"}, {"show"}, {"show", "--json"}} {
		out, errOut := runCollie(t, args...)
		assertTerminalSafe(t, strings.Join(args, " "), out+errOut, false)
		if !strings.Contains(out, "500 Internal Server Error") {
			t.Errorf("collie %s does not show the status:\n%s", strings.Join(args, " "), out)
		}
	}
}

// TestPrintersX1: even if a path forgot to clean (the daemon's view is
// built elsewhere), collie show and durable list write nothing a terminal
// acts on, and no field forges a row or a column (X1, defence in depth).
func TestPrintersX1(t *testing.T) {
	raw := "bad" + pwn + "\r\nevil  socket  /x  just now  reachable\tcol\u009b31m\u2028\u00ad"
	q := wire.Question{ID: "q" + pwn, Kind: raw, Title: raw, Rationale: raw, Revision: 1,
		Options: []wire.Option{{ID: "o", Label: raw}}, Fields: []wire.Field{{ID: "f", Label: raw}}}
	conv := wire.Conversation{ID: "c", Title: raw, Questions: []wire.Question{q}, Items: []wire.Item{
		{ID: "i1", Kind: wire.KindText, Role: raw, Text: raw},
		{ID: "i2", Kind: wire.KindLink, Text: raw, URL: raw},
		{ID: "i3", Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: raw, Status: raw, Summary: raw}},
		{ID: "i4", Kind: raw, Text: raw},
	}}
	snap := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: raw, Tabs: []wire.Tab{{ID: "t", Title: raw, Conversations: []wire.Conversation{conv}}}}},
		Belt: []wire.Button{{ID: "b", Label: raw}}, Starters: []wire.Starter{{ID: "st", Label: raw}}}
	views := []view.Agent{
		{AgentStatus: view.AgentStatus{Name: raw, Reachable: true, Agent: raw}, Snapshot: snap},
		{AgentStatus: view.AgentStatus{Name: raw, Reason: raw}},
	}
	var show bytes.Buffer
	w := sanitize.NewTerminalWriter(&show)
	for _, v := range views {
		printAgent(w, v)
	}
	w.Flush()
	assertTerminalSafe(t, "show", show.String(), true)

	var list bytes.Buffer
	now := time.Now()
	err := writeList(&list, []view.AgentStatus{{Name: raw, Transport: raw, Target: raw, Reason: raw, Checked: now.Add(-3 * time.Second)}}, now)
	if err != nil {
		t.Fatal(err)
	}
	assertTerminalSafe(t, "durable list", list.String(), false)
	if n := strings.Count(list.String(), "\n"); n != 2 {
		t.Errorf("durable list wrote %d lines for one agent, want 2 (a field forged a row):\n%s", n, list.String())
	}
	if !strings.Contains(list.String(), "3s ago") {
		t.Errorf("durable list does not say how old the status is:\n%s", list.String())
	}

	var js bytes.Buffer
	if err := writeJSON(&js, views); err != nil {
		t.Fatal(err)
	}
	assertTerminalSafe(t, "--json", js.String(), false)
	var back []view.Agent
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back[1].Reason != raw {
		t.Errorf("--json no longer means the same: %v, %q", err, back[1].Reason)
	}
}

func TestAge(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "never"},
		{now.Add(-300 * time.Millisecond), "just now"},
		{now.Add(-9 * time.Second), "9s ago"},
		{now.Add(-2 * time.Minute), "2m ago"},
	} {
		if got := age(now, c.t); got != c.want {
			t.Errorf("age(%v) = %q, want %q", now.Sub(c.t), got, c.want)
		}
	}
}
