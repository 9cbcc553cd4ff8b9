package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// agent is an in-process durable agent on a private socket, with the
// caller check off: here the test process both asks and answers, which
// the check would refuse. The e2e tests answer from an unrelated process
// with the check on.
type agent struct {
	path  string
	board *board.Board
	hc    *http.Client
}

func startAgent(t *testing.T, o board.Options) *agent {
	t.Helper()
	dir, err := os.MkdirTemp("", "ask-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "desk", "a.sock")
	l, _, err := durable.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := durable.NewServer(wire.Hello{Agent: "a"}, log)
	if err != nil {
		t.Fatal(err)
	}
	o.Space, o.Tab = wire.Space{ID: "main", Title: "A"}, wire.Space{ID: "main", Title: "Main"}
	o.Main.ID, o.Main.Title = "main", "Questions"
	b, err := board.New(srv, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.ServeTransport(ctx, l, durable.Transport{Unchecked: true}); close(done) }()
	t.Cleanup(func() { cancel(); b.Stop(); <-done })
	return &agent{path: path, board: b, hc: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}}
}

// open waits for an open question and returns it.
func (a *agent) open(t *testing.T) wire.Question {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		for _, c := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
			if len(c.Questions) > 0 {
				return c.Questions[0]
			}
		}
	}
	t.Fatal("no question was asked within 10s")
	return wire.Question{}
}

func (a *agent) answer(t *testing.T, r wire.AnswerRequest) {
	t.Helper()
	b, _ := json.Marshal(r)
	resp, err := a.hc.Post("http://agent"+wire.AnswerPath, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("answer: %s %s", resp.Status, body)
	}
}

type askResult struct {
	code           int
	stdout, stderr string
}

// runAsk runs Main in the background, as a script would run collie ask.
func runAsk(a *agent, stdin string, args ...string) <-chan askResult {
	ch := make(chan askResult, 1)
	go func() {
		var out, errb bytes.Buffer
		f, _ := os.CreateTemp("", "stdin-")
		f.WriteString(stdin)
		f.Seek(0, 0)
		defer os.Remove(f.Name())
		defer f.Close()
		path := "/nonexistent/none.sock"
		if a != nil {
			path = a.path
		}
		code := Main(context.Background(), append([]string{"--socket", path}, args...), Env{
			Stdin: f, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "collie ask",
		})
		ch <- askResult{code, out.String(), errb.String()}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan askResult) askResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("collie ask did not return")
	}
	return askResult{}
}

func TestAskKindsD1(t *testing.T) {
	a := startAgent(t, board.Options{})
	tests := []struct {
		name   string
		args   []string
		answer func(q wire.Question) wire.AnswerRequest
		code   int
		stdout string
	}{
		{"yes_no_yes", []string{"--yes-no", "--rationale", "CI passed", "Deploy main?"},
			func(q wire.Question) wire.AnswerRequest { return ans(q, "yes") }, ExitYes, "yes\n"},
		{"yes_no_no", []string{"--yes-no", "--title", "Drop the table?"},
			func(q wire.Question) wire.AnswerRequest { return ans(q, "no") }, ExitNo, "no\n"},
		{"choice", []string{"--choice", "staging", "--choice", "production", "Where to?"},
			func(q wire.Question) wire.AnswerRequest { return ans(q, q.Options[1].ID) }, ExitYes, "production\n"},
		{"line", []string{"--line", "Branch name?"},
			func(q wire.Question) wire.AnswerRequest {
				return wire.AnswerRequest{Header: wire.Header{RequestID: "l"}, Conversation: "main", Question: q.ID, Revision: q.Revision, Text: "fix/cart"}
			}, ExitYes, "fix/cart\n"},
		{"form", []string{"--form", "version=Version", "--form", "notes=Release notes", "Release?"},
			func(q wire.Question) wire.AnswerRequest {
				return wire.AnswerRequest{Header: wire.Header{RequestID: "f"}, Conversation: "main", Question: q.ID, Revision: q.Revision, Values: map[string]string{"version": "1.4.0", "notes": "faster"}}
			}, ExitYes, "version=1.4.0\nnotes=faster\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := runAsk(a, "", tt.args...)
			q := a.open(t)
			a.answer(t, tt.answer(q))
			r := wait(t, ch)
			if r.code != tt.code || r.stdout != tt.stdout {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q", r.code, r.stdout, r.stderr, tt.code, tt.stdout)
			}
		})
	}
	t.Run("json_with_reason", func(t *testing.T) {
		ch := runAsk(a, "", "--yes-no", "--json", "Restart nginx?")
		q := a.open(t)
		r := ans(q, "no")
		r.Reason = "not during the sale"
		a.answer(t, r)
		res := wait(t, ch)
		var got Result
		if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
			t.Fatalf("%v: %q", err, res.stdout)
		}
		if res.code != ExitNo || got.Status != "answered" || *got.Answer != "no" || got.Reason != "not during the sale" || got.Exit != ExitNo {
			t.Fatalf("exit %d, %+v", res.code, got)
		}
	})
}

func ans(q wire.Question, opt string) wire.AnswerRequest {
	return wire.AnswerRequest{Header: wire.Header{RequestID: "a-" + q.ID + "-" + opt}, Conversation: "main", Question: q.ID, Revision: q.Revision, OptionIDs: []string{opt}}
}

func TestAskOutcomes(t *testing.T) {
	a := startAgent(t, board.Options{})
	t.Run("default_deny_on_timeout", func(t *testing.T) {
		start := time.Now()
		r := wait(t, runAsk(a, "", "--yes-no", "--timeout", "1s", "Quick one?"))
		if r.code != ExitTimedOut || r.stdout != "no\n" || !strings.Contains(r.stderr, "no answer within 1s; denied by default") {
			t.Fatalf("%+v", r)
		}
		if d := time.Since(start); d > 8*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("D9_tool_call_key", func(t *testing.T) {
		first := runAsk(a, "", "--yes-no", "--tool-call", "deploy-42", "Deploy 42?")
		q := a.open(t)
		second := runAsk(a, "", "--yes-no", "--json", "--tool-call", "deploy-42", "Deploy 42?")
		// Whenever the second ask reaches the agent, before the answer or
		// after it, it must get the first one's question: its reply says
		// so (Existing, the same question id) below, which needs no wait.
		n := 0
		for _, c := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
			n += len(c.Questions)
		}
		if n != 1 {
			t.Fatalf("D9: %d open questions for one key", n)
		}
		a.answer(t, ans(q, "yes"))
		r1, r2 := wait(t, first), wait(t, second)
		if r1.code != ExitYes || r2.code != ExitYes {
			t.Fatalf("%+v %+v", r1, r2)
		}
		var got2 Result
		if err := json.Unmarshal([]byte(r2.stdout), &got2); err != nil || !got2.Existing || got2.Question != q.ID {
			t.Fatalf("D9: the second ask for the key got %+v (%v), want the first one's question %s", got2, err, q.ID)
		}
		r3 := wait(t, runAsk(a, "", "--yes-no", "--json", "--tool-call", "deploy-42", "Deploy 42?"))
		var got Result
		json.Unmarshal([]byte(r3.stdout), &got)
		if r3.code != ExitYes || !got.Existing || got.Question != q.ID {
			t.Fatalf("D9: a third ask got %+v (exit %d), want the existing decision", got, r3.code)
		}
	})
	t.Run("withdrawn", func(t *testing.T) {
		ch := runAsk(a, "", "--yes-no", "Abort me?")
		q := a.open(t)
		if _, err := a.board.Abort(&wire.AbortRequest{Header: wire.Header{RequestID: "ab"}, Conversation: "main", Question: q.ID}); err != nil {
			t.Fatal(err)
		}
		if r := wait(t, ch); r.code != ExitWithdrawn || !strings.Contains(r.stderr, "withdrawn") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		r := wait(t, runAsk(nil, "", "--yes-no", "Anyone?"))
		if r.code != ExitError || !strings.Contains(r.stderr, "cannot reach the agent") {
			t.Fatalf("%+v", r)
		}
	})
	for _, u := range []struct {
		name string
		args []string
		want string
	}{
		{"no_kind", []string{"Title?"}, "give exactly one kind"},
		{"two_kinds", []string{"--yes-no", "--line", "Title?"}, "give exactly one kind"},
		{"no_title", []string{"--yes-no"}, "no title"},
		{"one_choice", []string{"--choice", "A", "T?"}, "2 to 32 options"},
		{"bad_form", []string{"--form", "nolabel", "T?"}, "is not ID=LABEL"},
		{"command_without_tool", []string{"--yes-no", "--command", "ls", "T?"}, "--command needs --tool"},
		{"unknown_hook", []string{"--hook", "cursor"}, "the adapters are: claude, codex, gemini"},
	} {
		t.Run("usage/"+u.name, func(t *testing.T) {
			r := wait(t, runAsk(a, "", u.args...))
			if r.code != ExitUsage || !strings.Contains(r.stderr, u.want) {
				t.Fatalf("%+v, want exit 2 and %q", r, u.want)
			}
		})
	}
}

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func decode(t *testing.T, out string) hook.Decision {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	var o hook.Output
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("hook output %q: %v", out, err)
	}
	if o.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Fatalf("hook output %q", out)
	}
	return o.HookSpecificOutput
}

func TestQuestionFor(t *testing.T) {
	tests := []struct {
		file, title, key, tool, command, rationale string
	}{
		{"bash_git_push.json", "Claude Code: Run: git push origin main", "claude-toolu_01XkQf7Vv2m9aJpL3nR8sT4u", "Bash", "git push origin main", "Push the release commit to origin\n\n$ git push origin main\n\nin /home/ana/src/shop"},
		{"bash_rm_multiline.json", "Claude Code: Run: rm -rf build/ dist/ …", "claude-toolu_01Hc8wPZyN4dQeR6tUv2XbLm", "Bash", "rm -rf build/ dist/\nnpm run build", "$ rm -rf build/ dist/\nnpm run build"},
		{"write_file.json", "Claude Code: Write /home/ana/src/shop/.github/workflows/deploy.yml", "claude-toolu_01Pq3RsT5uVw7XyZ9aBcDeFg", "Write", "/home/ana/src/shop/.github/workflows/deploy.yml", "run: ./scripts/deploy.sh"},
		{"edit_file.json", "Claude Code: Edit /home/ana/src/shop/config/production.toml", "claude-toolu_01Jk4LmN6oPq8RsT0uVwXyZa", "Edit", "/home/ana/src/shop/config/production.toml", "- max_connections = 20\n+ max_connections = 200"},
		{"webfetch.json", "Claude Code: Fetch https://pkg.go.dev/net/http", "claude-toolu_01Ab2Cd4Ef6Gh8Ij0Kl2Mn4O", "WebFetch", "https://pkg.go.dev/net/http", "write deadline"},
		{"mcp_tool_no_use_id.json", "Claude Code: Use mcp__github__create_issue", "claude-", "mcp__github__create_issue", "", `"title":"Checkout fails on empty cart"`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var in hook.PreToolUse
			if err := json.Unmarshal([]byte(sample(t, tt.file)), &in); err != nil {
				t.Fatal(err)
			}
			r := hook.QuestionFor(in)
			r.RequestID = "x"
			if err := r.Validate(); err != nil {
				t.Fatalf("the question is not valid: %v", err)
			}
			if r.Title != tt.title || !strings.HasPrefix(r.ToolCall, tt.key) || r.Tool == nil || r.Tool.Name != tt.tool || r.Tool.Command != tt.command || !strings.Contains(r.Rationale, tt.rationale) {
				t.Fatalf("got title %q key %q tool %+v rationale %q", r.Title, r.ToolCall, r.Tool, r.Rationale)
			}
			if r.Shortened || r.Detail != "" {
				t.Fatalf("X3: a short, clean tool call is marked shortened (%v) or carries a detail (%d bytes)", r.Shortened, len(r.Detail))
			}
		})
	}
	t.Run("D9_key_without_tool_use_id_is_stable", func(t *testing.T) {
		var in hook.PreToolUse
		json.Unmarshal([]byte(sample(t, "mcp_tool_no_use_id.json")), &in)
		k1 := hook.QuestionFor(in).ToolCall
		in.ToolInput = json.RawMessage(strings.ReplaceAll(string(in.ToolInput), "\n", "\n  "))
		if k2 := hook.QuestionFor(in).ToolCall; k1 != k2 || len(k1) != len("claude-")+40 {
			t.Fatalf("keys %q %q", k1, k2)
		}
	})
}

func TestHookClaude(t *testing.T) {
	a := startAgent(t, board.Options{AllowAlways: true, AlwaysFor: time.Hour})
	t.Run("allow_with_reason", func(t *testing.T) {
		ch := runAsk(a, sample(t, "bash_git_push.json"), "--hook", "claude")
		q := a.open(t)
		if !q.AllowAlways || q.AlwaysScope == nil || q.AlwaysScope.CommandPrefix != "git push" || !strings.HasPrefix(q.ToolCall, "claude-toolu_01XkQf7Vv2m9aJpL3nR8sT4u-") {
			t.Fatalf("question %+v scope %+v", q, q.AlwaysScope)
		}
		r := ans(q, "yes")
		r.Reason = "release day"
		a.answer(t, r)
		res := wait(t, ch)
		d := decode(t, res.stdout)
		if res.code != 0 || d.PermissionDecision != "allow" || !strings.Contains(d.PermissionDecisionReason, "release day") {
			t.Fatalf("exit %d %+v", res.code, d)
		}
	})
	t.Run("D9_same_tool_call_decided_once", func(t *testing.T) {
		res := wait(t, runAsk(a, sample(t, "bash_git_push.json"), "--hook", "claude"))
		if d := decode(t, res.stdout); d.PermissionDecision != "allow" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("deny", func(t *testing.T) {
		ch := runAsk(a, sample(t, "edit_file.json"), "--hook", "claude")
		q := a.open(t)
		r := ans(q, "no")
		r.Reason = "keep 20, the database is small"
		a.answer(t, r)
		d := decode(t, wait(t, ch).stdout)
		if d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, "keep 20, the database is small") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("always_allow_then_let_through", func(t *testing.T) {
		ch := runAsk(a, sample(t, "webfetch.json"), "--hook", "claude")
		q := a.open(t)
		r := ans(q, "yes")
		r.Always = true
		a.answer(t, r)
		if d := decode(t, wait(t, ch).stdout); d.PermissionDecision != "allow" {
			t.Fatalf("%+v", d)
		}
		// Another call of the same tool and address, a new tool_use_id.
		other := strings.Replace(sample(t, "webfetch.json"), "toolu_01Ab2Cd4Ef6Gh8Ij0Kl2Mn4O", "toolu_01Zz9Yy8Xx7Ww6Vv5Uu4Tt3S", 1)
		d := decode(t, wait(t, runAsk(a, other, "--hook", "claude")).stdout)
		if d.PermissionDecision != "allow" || !strings.Contains(d.PermissionDecisionReason, "always-allow grant") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("default_deny_on_timeout", func(t *testing.T) {
		d := decode(t, wait(t, runAsk(a, sample(t, "bash_rm_multiline.json"), "--hook", "claude", "--timeout", "1s")).stdout)
		if d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, "within 1s; Collie denies by default") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("other_event_denied", func(t *testing.T) {
		d := decode(t, wait(t, runAsk(a, sample(t, "post_tool_use.json"), "--hook", "claude")).stdout)
		if d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, "PostToolUse") {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("broken_input_denied", func(t *testing.T) {
		d := decode(t, wait(t, runAsk(a, "{not json", "--hook", "claude")).stdout)
		if d.PermissionDecision != "deny" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("agent_down_denied", func(t *testing.T) {
		res := wait(t, runAsk(nil, sample(t, "bash_git_push.json"), "--hook", "claude"))
		d := decode(t, res.stdout)
		if res.code != 0 || d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, "cannot reach the agent") {
			t.Fatalf("exit %d %+v", res.code, d)
		}
	})
}

func TestFindSocket(t *testing.T) {
	run := t.TempDir()
	desk := filepath.Join(run, "desk")
	os.Mkdir(desk, 0o700)
	env := map[string]string{"XDG_RUNTIME_DIR": run}
	get := func(k string) string { return env[k] }
	if _, err := hook.FindSocket("", "", get); err == nil || !strings.Contains(err.Error(), "no agent socket") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(filepath.Join(desk, "a.sock"), nil, 0o600)
	if p, err := hook.FindSocket("", "", get); err != nil || p != filepath.Join(desk, "a.sock") {
		t.Fatalf("%q %v", p, err)
	}
	os.WriteFile(filepath.Join(desk, "b.sock"), nil, 0o600)
	if _, err := hook.FindSocket("", "", get); err == nil || !strings.Contains(err.Error(), "(a, b); choose one with --agent NAME") {
		t.Fatalf("err = %v", err)
	}
	if p, _ := hook.FindSocket("", "b", get); p != filepath.Join(desk, "b.sock") {
		t.Fatal(p)
	}
	env["COLLIE_AGENT_SOCKET"] = "/x.sock"
	if p, _ := hook.FindSocket("", "", get); p != "/x.sock" {
		t.Fatal(p)
	}
	if _, err := hook.FindSocket("", "../etc", get); err == nil {
		t.Fatal("a name with a slash was taken")
	}
}
