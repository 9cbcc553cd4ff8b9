//go:build linux

package agentclients

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// markScript is the fake model's script for each client: one shell call
// that writes MARK in the project folder, then "all done".
func markScript(tool, commandKey, mark string, extra map[string]any) []fakemodel.Turn {
	in := map[string]any{commandKey: "echo ran > " + mark}
	for k, v := range extra {
		in[k] = v
	}
	return []fakemodel.Turn{fakemodel.ToolCall(tool, in), fakemodel.Say("all done")}
}

// loopResult returns the result the client sent back for the first call:
// in the second request of its agent loop.
func loopResult(t *testing.T, api *fakemodel.Server) fakemodel.ToolResult {
	t.Helper()
	loop := api.TurnRequests()
	if len(loop) < 2 {
		t.Fatalf("%d requests of the agent loop, want 2 (the call, then its result)", len(loop))
	}
	rs := loop[1].ToolResults()
	if len(rs) != 1 {
		t.Fatalf("the second request carries %d tool results, want 1: %s", len(rs), loop[1].Body)
	}
	return rs[0]
}

// TestCodex_PreToolUseHook records what Codex CLI 0.169 (codex exec, with
// approvals and sandbox bypassed) does with a PreToolUse command hook in
// $CODEX_HOME/config.toml, marked trusted. Its shell tool is exec_command
// and the hook sees it as "Bash".
func TestCodex_PreToolUseHook(t *testing.T) {
	Require(t, Codex)
	rows := []struct {
		name      string
		hook      string // script, "missing", or "" for none
		args      []string
		timeout   int
		wantRan   bool
		wantInRes string
	}{
		{name: "no hook", wantRan: true},
		{name: "deny", hook: "deny.sh", wantInRes: "Command blocked by PreToolUse hook: denied on the phone: REASON-42"},
		{name: "exit 2", hook: "exit2.sh", wantInRes: "blocked by exit 2: REASON-2"},
		// Every failure fails open, and there is no switch to change it.
		{name: "missing command fails open", hook: "missing", wantRan: true},
		{name: "exit 1 fails open", hook: "exit1.sh", wantRan: true},
		{name: "bad JSON fails open", hook: "badjson.sh", wantRan: true},
		{name: "unknown decision fails open", hook: "unknown-decision.sh", wantRan: true},
		{name: "timeout fails open", hook: "sleep.sh", args: []string{"30"}, timeout: 2, wantRan: true},
		// PreToolUse cannot allow: "allow" is unsupported (the hook is
		// counted as failed) and the tool runs only because nothing else
		// stops it here.
		{name: "allow is unsupported", hook: "allow.sh", wantRan: true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start(markScript("exec_command", "cmd", mark, nil))
			defer api.Close()
			configPath := filepath.Join(k.CodexHome(), "config.toml")
			var hooks string
			if tc.hook != "" {
				cmd := k.hook(tc.hook, tc.args...)
				if tc.hook == "missing" {
					cmd = k.hook("no-such-collie")
				}
				timeout := tc.timeout
				if timeout == 0 {
					timeout = 30
				}
				hooks = CodexHook{Event: "PreToolUse", Matcher: "*", Command: cmd, Timeout: timeout}.TOML(configPath)
			}
			if err := k.WriteFile(configPath, []byte(CodexConfig(api.URL, hooks)), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := k.RunCodex(context.Background(), clientTimeout, api.URL, "make a mark",
				"--dangerously-bypass-approvals-and-sandbox")
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("codex: %v", res)
			}
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
			tr := loopResult(t, api)
			if !tc.wantRan && !strings.Contains(tr.Content, tc.wantInRes) {
				t.Errorf("tool result %q, want it to contain %q", tr.Content, tc.wantInRes)
			}
			if tc.hook == "deny.sh" {
				in, err := os.ReadFile(filepath.Join(k.record, "input.json"))
				if err != nil {
					t.Fatalf("the trusted hook did not run: %v", err)
				}
				for _, want := range []string{`"hook_event_name":"PreToolUse"`, `"tool_name":"Bash"`,
					`"tool_input":{"command":"echo ran > ` + mark + `"}`, `"permission_mode":"bypassPermissions"`} {
					if !strings.Contains(string(in), want) {
						t.Errorf("hook input lacks %s:\n%s", want, in)
					}
				}
			}
		})
	}
}

// TestCodex_HookTrust: a hook whose trust is not recorded in
// [hooks.state] is skipped without a word (the tool runs, the hook never
// starts); the recorded hash makes it run; --dangerously-bypass-hook-trust
// runs it untrusted; and a hash for another command is no trust.
func TestCodex_HookTrust(t *testing.T) {
	Require(t, Codex)
	rows := []struct {
		name    string
		trust   string // "none", "hash", "wrong hash", "flag"
		wantRan bool
	}{
		{"untrusted is skipped", "none", true},
		{"trusted by hash", "hash", false},
		{"hash of another command", "wrong hash", true},
		{"bypass flag", "flag", false},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start(markScript("exec_command", "cmd", mark, nil))
			defer api.Close()
			configPath := filepath.Join(k.CodexHome(), "config.toml")
			h := CodexHook{Event: "PreToolUse", Matcher: "*", Command: k.hook("deny.sh"), Timeout: 30}
			var hooks string
			args := []string{"--dangerously-bypass-approvals-and-sandbox"}
			switch tc.trust {
			case "none":
				hooks = h.TOML("")
			case "hash":
				hooks = h.TOML(configPath)
			case "wrong hash":
				other := h
				other.Command = k.hook("allow.sh")
				hooks = h.TOML("") + "\n[hooks.state." + `"` + configPath + `:pre_tool_use:0:0"]` + "\ntrusted_hash = \"" + other.TrustedHash() + "\"\n"
			case "flag":
				hooks = h.TOML("")
				args = append(args, "--dangerously-bypass-hook-trust")
			}
			if err := k.WriteFile(configPath, []byte(CodexConfig(api.URL, hooks)), 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := k.RunCodex(context.Background(), clientTimeout, api.URL, "make a mark", args...)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("codex: %v %v", err, res)
			}
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
			_, hookErr := os.Stat(filepath.Join(k.record, "input.json"))
			if hookRan := hookErr == nil; hookRan == tc.wantRan {
				t.Errorf("the hook ran: %v, want %v", hookRan, !tc.wantRan)
			}
		})
	}
}

// TestCodex_ExecNeverAsks: codex exec runs with approval "never" whatever
// approval_policy says, so an escalation the model asks for is refused
// and a PermissionRequest hook is never consulted there.
func TestCodex_ExecNeverAsks(t *testing.T) {
	Require(t, Codex)
	k := newHookKit(t)
	mark := filepath.Join(k.Project, "MARK")
	api := fakemodel.Start(markScript("exec_command", "cmd", mark,
		map[string]any{"sandbox_permissions": "require_escalated", "justification": "make the mark"}))
	defer api.Close()
	configPath := filepath.Join(k.CodexHome(), "config.toml")
	hooks := CodexHook{Event: "PermissionRequest", Matcher: "*", Command: k.hook("allow.sh"), Timeout: 30}.TOML(configPath)
	if err := k.WriteFile(configPath, []byte(CodexConfig(api.URL, hooks)), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := k.RunCodex(context.Background(), clientTimeout, api.URL, "make a mark",
		"-c", `approval_policy="on-request"`, "-s", "workspace-write")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("codex: %v %v", err, res)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the escalated command ran")
	}
	if tr := loopResult(t, api); !strings.Contains(tr.Content, "approval policy is Never") {
		t.Errorf("tool result %q, want the refusal under approval never", tr.Content)
	}
	if _, err := os.Stat(filepath.Join(k.record, "input.json")); err == nil {
		t.Error("the PermissionRequest hook ran under codex exec")
	}
}

// TestGemini_BeforeToolHook records what Gemini CLI 0.61 (gemini -p,
// --approval-mode yolo: in the default mode -p does not offer the shell
// tool at all) does with a hooks.BeforeTool command hook.
func TestGemini_BeforeToolHook(t *testing.T) {
	Require(t, Gemini)
	rows := []struct {
		name      string
		hook      string
		args      []string
		timeoutMS int
		mode      string
		wantRan   bool
		wantInRes string
	}{
		{name: "no hook, yolo", mode: "yolo", wantRan: true},
		{name: "no hook, default: no shell tool", mode: "default", wantInRes: `Tool \"run_shell_command\" not found`},
		{name: "deny, yolo", hook: "gemini-deny.sh", mode: "yolo", wantInRes: "Tool execution blocked: denied on the phone: REASON-42"},
		{name: "allow, yolo", hook: "gemini-allow.sh", mode: "yolo", wantRan: true},
		{name: "exit 2 blocks", hook: "exit2.sh", mode: "yolo", wantInRes: "Tool execution blocked: blocked by exit 2: REASON-2"},
		// A missing command exits 127 from the shell: counted as a block.
		{name: "missing command blocks", hook: "missing", mode: "yolo", wantInRes: "Tool execution blocked"},
		{name: "exit 1 fails open", hook: "exit1.sh", mode: "yolo", wantRan: true},
		{name: "bad JSON fails open", hook: "badjson.sh", mode: "yolo", wantRan: true},
		{name: "timeout fails open", hook: "sleep.sh", args: []string{"30"}, timeoutMS: 2000, mode: "yolo", wantRan: true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start(markScript("run_shell_command", "command", mark, map[string]any{"description": "make a mark"}))
			defer api.Close()
			var hooks []GeminiHook
			if tc.hook != "" {
				cmd := k.hook(tc.hook, tc.args...)
				if tc.hook == "missing" {
					cmd = k.hook("no-such-collie")
				}
				hooks = append(hooks, GeminiHook{Matcher: "run_shell_command", Command: cmd, TimeoutMS: tc.timeoutMS})
			}
			if err := k.WriteFile(k.GeminiSettingsPath(), GeminiSettings(hooks...), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := k.RunGemini(context.Background(), clientTimeout, api.URL, "make a mark", "--approval-mode", tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("gemini: %v", res)
			}
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
			tr := loopResult(t, api)
			if !tc.wantRan && !strings.Contains(tr.Content, tc.wantInRes) {
				t.Errorf("tool result %q, want it to contain %q", tr.Content, tc.wantInRes)
			}
			if tc.timeoutMS > 0 {
				start, ok1 := k.recordedSeconds(t, "sleep-start")
				term, ok2 := k.recordedSeconds(t, "sleep-term")
				if !ok1 || !ok2 {
					t.Fatal("the hanging hook did not record its start and its SIGTERM")
				}
				want := float64(tc.timeoutMS) / 1000
				if d := term - start; d < want-0.5 || d > want+5 {
					t.Errorf("the hook was stopped %.2fs after it started, want about %.1fs", d, want)
				}
			}
		})
	}
}

// TestOpenCode_RunPermissions records `opencode run` 1.18 with the
// permission setting for bash: "allow" runs, "ask" is rejected at once
// (no one to ask in run) and ends the run, "deny" takes the tool away.
func TestOpenCode_RunPermissions(t *testing.T) {
	Require(t, OpenCode)
	rows := []struct {
		perm      string
		wantRan   bool
		wantLoop  int    // requests of the agent loop
		wantInErr string // in stderr
	}{
		{"allow", true, 2, ""},
		{"ask", false, 1, "auto-rejecting"},
		{"deny", false, 2, ""},
	}
	for _, tc := range rows {
		t.Run(tc.perm, func(t *testing.T) {
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start(markScript("bash", "command", mark, map[string]any{"description": "make a mark"}))
			defer api.Close()
			if err := k.WriteFile(k.OpenCodeConfigPath(), OpenCodeConfig(api.URL, map[string]any{"bash": tc.perm}), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := k.RunOpenCode(context.Background(), clientTimeout, api.URL, "make a mark")
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
			if n := len(api.TurnRequests()); n != tc.wantLoop {
				t.Errorf("%d requests of the agent loop, want %d", n, tc.wantLoop)
			}
			if !strings.Contains(string(res.Stderr), tc.wantInErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantInErr, res.Stderr)
			}
		})
	}
}

// TestGemini_RouterAnswered: without -m, Gemini CLI first asks a router
// model for JSON of a schema; the fake answers in kind, so the run goes
// on to the agent loop at once instead of retrying for a minute and a
// half.
func TestGemini_RouterAnswered(t *testing.T) {
	Require(t, Gemini)
	k := newHookKit(t)
	mark := filepath.Join(k.Project, "MARK")
	api := fakemodel.Start(markScript("run_shell_command", "command", mark, nil))
	defer api.Close()
	if err := k.WriteFile(k.GeminiSettingsPath(), GeminiSettings(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append([]string{"GEMINI_API_KEY=collie-test", "GOOGLE_GEMINI_BASE_URL=" + api.URL,
		"GEMINI_CLI_TRUST_WORKSPACE=true"}, Offline(api.URL)...)
	res, err := k.Run(context.Background(), clientTimeout, nil, env, Path(Gemini),
		"-p", "make a mark", "--output-format", "json", "--approval-mode", "yolo")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("gemini: %v %v", err, res)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("the tool did not run: %v", res)
	}
	side := 0
	for _, r := range api.Requests() {
		if r.Dialect == fakemodel.Gemini && r.Turn < 0 && strings.Contains(string(r.Body), "responseJsonSchema") {
			side++
		}
	}
	if side != 1 {
		t.Errorf("%d router requests, want 1 (more means Gemini retried the answer)", side)
	}
}
