package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// hookInput is a tool call as client h sends it to its hook.
func hookInput(h *HookClient, id string) string {
	tool, event := "Bash", h.Events[0]
	switch h.Name {
	case "gemini":
		tool = "run_shell_command"
	case "opencode":
		tool = "bash"
	}
	b, _ := json.Marshal(map[string]any{"session_id": "s1", "cwd": "/home/ana/src/shop", "hook_event_name": event,
		"tool_name": tool, "tool_input": map[string]any{"command": "make deploy"}, "tool_use_id": id})
	return string(b)
}

// decisionOf reads what the adapter printed as allow (true) or deny, in
// the client's own format, with the reason.
func decisionOf(t *testing.T, h *HookClient, r askResult) (allow bool, reason string) {
	t.Helper()
	switch h.Name {
	case "claude":
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (Claude Code reads the JSON at 0)", r.code)
		}
		d := decode(t, r.stdout)
		return d.PermissionDecision == "allow", d.PermissionDecisionReason
	case "gemini":
		var o struct{ Decision, Reason string }
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
			t.Fatalf("stdout %q: %v", r.stdout, err)
		}
		if allow := o.Decision == "allow"; allow != (r.code == 0) || (!allow && (r.code != 2 || !strings.Contains(r.stderr, o.Reason))) {
			t.Fatalf("decision %q with exit %d and stderr %q: a deny is exit 2 with the reason on stderr", o.Decision, r.code, r.stderr)
		}
		return o.Decision == "allow", o.Reason
	case "opencode":
		// The plugin lets the tool run only for an allow at exit 0.
		var o struct{ Decision, Reason string }
		if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || r.code != 0 {
			t.Fatalf("stdout %q exit %d: %v", r.stdout, r.code, err)
		}
		return o.Decision == "allow", o.Reason
	case "codex":
		if r.code == 0 && r.stdout == "" {
			return true, ""
		}
		if r.code != 2 || r.stderr == "" {
			t.Fatalf("exit %d stderr %q: a PreToolUse deny is exit 2 with the reason on stderr", r.code, r.stderr)
		}
		return false, strings.TrimSpace(r.stderr)
	}
	t.Fatalf("no reader for %s", h.Name)
	return false, ""
}

// TestHookAdapters_D1: every client's adapter asks, prints its client's
// allow for a yes and its deny (with the reason) for a no.
func TestHookAdapters_D1(t *testing.T) {
	a := startAgent(t, board.Options{})
	for _, h := range hookRows() {
		t.Run(h.Name, func(t *testing.T) {
			for _, opt := range []string{"yes", "no"} {
				ch := runAsk(a, hookInput(h, "toolu_"+opt), "--hook", h.Name, "--timeout", "20s")
				q := a.open(t)
				if !strings.HasPrefix(q.Title, h.Label+": Run: make deploy") || !strings.HasPrefix(q.ToolCall, h.Name+"-toolu_"+opt+"-") {
					t.Fatalf("question %q key %q", q.Title, q.ToolCall)
				}
				r := ans(q, opt)
				r.Reason = "reason-" + opt
				a.answer(t, r)
				allow, reason := decisionOf(t, h, wait(t, ch))
				if allow != (opt == "yes") || (opt == "no" && !strings.Contains(reason, "reason-no")) {
					t.Fatalf("%s: allow %v reason %q", opt, allow, reason)
				}
			}
		})
	}
}

// TestHookAdapters_FailClosed_D1: whatever the agent does, every adapter
// prints its client's deny by its deadline (wait + the grace), well
// before the client's own hook timeout (the deadline + the margin setup
// writes): an agent frozen after it accepted the connection (as SIGSTOP
// leaves it: the kernel queues the connection, nobody answers), a client
// that never closes the hook's stdin, an agent that is down.
func TestHookAdapters_FailClosed_D1(t *testing.T) {
	dir, err := os.MkdirTemp("", "frozen-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	frozen := filepath.Join(dir, "a.sock")
	l, err := net.Listen("unix", frozen)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // never accepts: a stopped agent's socket
	if err := os.Chmod(frozen, 0o600); err != nil {
		t.Fatal(err)
	}
	const waitFor = time.Second
	for _, h := range hookRows() {
		for _, tc := range []struct {
			name       string
			socket     string
			stdin      func() *os.File
			within     time.Duration
			wantReason string
		}{
			{name: "frozen_agent", socket: frozen, within: hook.Deadline(waitFor), wantReason: "denies by default"},
			{name: "stdin_never_closed", socket: frozen, stdin: openPipe(t), within: hook.Deadline(waitFor), wantReason: "No decision within"},
			{name: "agent_down", socket: filepath.Join(dir, "none.sock"), within: time.Second, wantReason: "no socket at"},
		} {
			t.Run(h.Name+"/"+tc.name, func(t *testing.T) {
				start := time.Now()
				var out, errb bytes.Buffer
				in := strings.NewReader(hookInput(h, "toolu_1"))
				e := Env{Stdin: in, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "collie ask"}
				if tc.stdin != nil {
					f := tc.stdin()
					defer f.Close()
					e.Stdin = f
				}
				code := Main(context.Background(), []string{"--socket", tc.socket, "--hook", h.Name, "--timeout", waitFor.String()}, e)
				took := time.Since(start)
				allow, reason := decisionOf(t, h, askResult{code, out.String(), errb.String()})
				if allow || !strings.Contains(reason, tc.wantReason) {
					t.Fatalf("allow %v reason %q, want a deny saying %q", allow, reason, tc.wantReason)
				}
				if limit := tc.within + 500*time.Millisecond; took > limit || took > (hook.ClientTimeoutFor(waitFor)+hook.Deadline(waitFor))/2 {
					t.Fatalf("the deny came %v after the start, want within %v", took, limit)
				}
			})
		}
	}
}

// openPipe returns a pipe's read end whose write end stays open until
// the test ends: a client that never closes the hook's stdin.
func openPipe(t *testing.T) func() *os.File {
	return func() *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		return r
	}
}

// TestHookTimeouts_D1: for every client, the adapter's default wait ends
// before the client's default hook timeout with the margin, and what
// setup writes leaves the margin too.
func TestHookTimeouts_D1(t *testing.T) {
	for _, h := range hookRows() {
		if d := hook.Deadline(h.DefaultWait()); hook.ClientTimeoutFor(h.DefaultWait()) > h.ClientDefault || h.DefaultWait() < 10*time.Second {
			t.Errorf("%s: default wait %v, deadline %v, client default %v", h.Name, h.DefaultWait(), d, h.ClientDefault)
		}
		if hook.ClientTimeoutFor(hook.SetupWait)-hook.Deadline(hook.SetupWait) < 10*time.Second {
			t.Errorf("margin under 10s")
		}
	}
}

// TestHookAdapters_AgentGoneAfterAsking_D1: the agent asks, then stops
// (a restart that does not come back in time): the adapter keeps trying
// its socket, and still prints its deny by its deadline.
func TestHookAdapters_AgentGoneAfterAsking_D1(t *testing.T) {
	for _, h := range hookRows() {
		t.Run(h.Name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "gone-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			path := filepath.Join(dir, "desk", "a.sock")
			l, _, err := durable.Listen(path)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := durable.NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			o := board.Options{Space: wire.Space{ID: "main", Title: "A"}, Tab: wire.Space{ID: "main", Title: "Main"}}
			o.Main.ID, o.Main.Title = "main", "Questions"
			b, err := board.New(srv, o)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Stop()
			ctx, stop := context.WithCancel(context.Background())
			served := make(chan struct{})
			go func() { srv.ServeTransport(ctx, l, durable.Transport{Unchecked: true}); close(served) }()
			a := &agent{path: path, board: b}
			start := time.Now()
			ch := runAsk(a, hookInput(h, "toolu_gone"), "--hook", h.Name, "--timeout", "2s")
			a.open(t)
			stop() // the agent goes, with the question open
			<-served
			r := wait(t, ch)
			took := time.Since(start)
			if allow, reason := decisionOf(t, h, r); allow || reason == "" {
				t.Fatalf("allow %v reason %q", allow, reason)
			}
			if took > hook.Deadline(2*time.Second)+time.Second {
				t.Fatalf("the deny came %v after the start, due by %v", took, hook.Deadline(2*time.Second))
			}
		})
	}
}

// hookRows are the table's rows that have a hook.
func hookRows() []*HookClient {
	var rows []*HookClient
	for _, h := range HookClients() {
		if h.HasHook() {
			rows = append(rows, h)
		}
	}
	return rows
}
