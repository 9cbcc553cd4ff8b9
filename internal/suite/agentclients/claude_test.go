//go:build linux

package agentclients

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// clientTimeout bounds one client run: the clients answer the fake API in
// a few seconds; a run that takes this long is stuck.
const clientTimeout = 90 * time.Second

// hookKit is a sandbox with the hook scripts of testdata/hooks in
// Root/hooks and a folder, Root/record, where they write what they saw
// ($COLLIE_TEST_RECORD).
type hookKit struct {
	*Sandbox
	hooks, record string
}

func newHookKit(t *testing.T) *hookKit {
	t.Helper()
	s := New(t)
	k := &hookKit{Sandbox: s, hooks: filepath.Join(s.Root, "hooks"), record: filepath.Join(s.Root, "record")}
	if err := s.MkdirAll(k.record); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("testdata/hooks")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/hooks", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteFile(filepath.Join(k.hooks, e.Name()), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s.Env = append(s.Env, "COLLIE_TEST_RECORD="+k.record)
	return k
}

// hook returns the command line of the hook script name with args.
func (k *hookKit) hook(name string, args ...string) string {
	return strings.Join(append([]string{filepath.Join(k.hooks, name)}, args...), " ")
}

// recordedSeconds reads a timestamp a hook wrote (date +%s.%N).
func (k *hookKit) recordedSeconds(t *testing.T, name string) (float64, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(k.record, name))
	if err != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f, true
}

// TestClaudeCode_PreToolUseHook runs the real Claude Code against the
// fake API, which asks for one Bash call (it writes a mark in the project
// folder) and then says "all done". It records what Claude Code 2.1.328
// does with a PreToolUse command hook in each case the hook adapter has
// to handle: whether the tool ran, and what the next request to the model
// carried as the tool's result.
func TestClaudeCode_PreToolUseHook(t *testing.T) {
	Require(t, Claude)
	type row struct {
		name      string
		hook      string // script in testdata/hooks, "missing" for a command that is not there, "" for no hook
		args      []string
		timeout   int
		onFailure string
		mode      string
		wantRan   bool
		wantInRes string // in the tool's result sent back to the model, when it did not run
	}
	rows := []row{
		// Controls: without a hook, -p in default mode denies a Bash
		// call that writes (there is no one to ask); bypassPermissions
		// runs it.
		{name: "no hook, default mode", mode: "default", wantRan: false, wantInRes: "needs approval"},
		{name: "no hook, bypassPermissions", mode: "bypassPermissions", wantRan: true},
		// A deny blocks in every mode, and the reason reaches the model.
		{name: "deny, default", hook: "deny.sh", mode: "default", wantInRes: "denied on the phone: REASON-42"},
		{name: "deny, acceptEdits", hook: "deny.sh", mode: "acceptEdits", wantInRes: "REASON-42"},
		{name: "deny, auto", hook: "deny.sh", mode: "auto", wantInRes: "REASON-42"},
		{name: "deny, dontAsk", hook: "deny.sh", mode: "dontAsk", wantInRes: "REASON-42"},
		{name: "deny, bypassPermissions", hook: "deny.sh", mode: "bypassPermissions", wantInRes: "REASON-42"},
		// An allow runs the tool where -p would otherwise deny it.
		{name: "allow, default", hook: "allow.sh", mode: "default", wantRan: true},
		{name: "allow, dontAsk", hook: "allow.sh", mode: "dontAsk", wantRan: true},
		// Exit status 2 blocks, with stderr as the reason.
		{name: "exit 2, bypassPermissions", hook: "exit2.sh", mode: "bypassPermissions", wantInRes: "REASON-2"},
		// Without onFailure, every failure of the hook fails open.
		{name: "missing command fails open", hook: "missing", mode: "bypassPermissions", wantRan: true},
		{name: "exit 1 fails open", hook: "exit1.sh", mode: "bypassPermissions", wantRan: true},
		{name: "bad JSON fails open", hook: "badjson.sh", mode: "bypassPermissions", wantRan: true},
		{name: "timeout fails open", hook: "sleep.sh", args: []string{"30"}, timeout: 2, mode: "bypassPermissions", wantRan: true},
		// "onFailure": "block" turns a missing command, a crash and a
		// timeout into a block...
		{name: "block: missing command", hook: "missing", onFailure: "block", mode: "bypassPermissions", wantInRes: `blocking because onFailure is "block"`},
		{name: "block: exit 1", hook: "exit1.sh", onFailure: "block", mode: "bypassPermissions", wantInRes: `blocking because onFailure is "block"`},
		{name: "block: timeout", hook: "sleep.sh", args: []string{"30"}, timeout: 2, onFailure: "block", mode: "bypassPermissions", wantInRes: "timed out; blocking"},
		// ...and a decision it does not know...
		{name: "block: unknown decision", hook: "unknown-decision.sh", onFailure: "block", mode: "bypassPermissions", wantInRes: `blocking because onFailure is "block"`},
		// ...but not output that is not JSON, nor silence: those still
		// run the tool. The adapter must print a well-formed deny on
		// every path of its own.
		{name: "block: bad JSON still runs", hook: "badjson.sh", onFailure: "block", mode: "bypassPermissions", wantRan: true},
		{name: "block: silence runs", hook: "silent.sh", onFailure: "block", mode: "bypassPermissions", wantRan: true},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start([]fakemodel.Turn{
				fakemodel.ToolCall("Bash", map[string]any{"command": "echo ran > " + mark, "description": "make a mark"}),
				fakemodel.Say("all done"),
			})
			defer api.Close()
			var settings []byte
			switch tc.hook {
			case "":
				settings = ClaudeSettings("Bash")
			case "missing":
				settings = ClaudeSettings("Bash", ClaudeHook{Command: k.hook("no-such-collie"), Timeout: tc.timeout, OnFailure: tc.onFailure})
			default:
				settings = ClaudeSettings("Bash", ClaudeHook{Command: k.hook(tc.hook, tc.args...), Timeout: tc.timeout, OnFailure: tc.onFailure})
			}
			if err := k.WriteFile(k.ClaudeSettingsPath(), settings, 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := k.RunClaude(context.Background(), clientTimeout, api.URL, "make a mark", "--permission-mode", tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("claude: %v", res)
			}
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
			loop := api.TurnRequests()
			if len(loop) != 2 {
				t.Fatalf("%d requests of the agent loop, want 2 (the call, then its result)", len(loop))
			}
			tr, ok := loop[1].ToolResult("toolu_fake0")
			if !ok {
				t.Fatalf("the second request carries no result for toolu_fake0: %s", loop[1].Body)
			}
			if !tc.wantRan {
				if !tr.IsError || !strings.Contains(tr.Content, tc.wantInRes) {
					t.Errorf("tool result %+v, want an error containing %q", tr, tc.wantInRes)
				}
				out, err := ParseClaudeOutput(res.Stdout)
				if err != nil {
					t.Fatal(err)
				}
				if len(out.PermissionDenials) != 1 || out.PermissionDenials[0].ToolUseID != "toolu_fake0" {
					t.Errorf("permission_denials %+v, want the one call", out.PermissionDenials)
				}
			} else if tr.IsError {
				t.Errorf("the tool ran but its result is an error: %+v", tr)
			}
			if tc.timeout > 0 {
				// The hook is sent SIGTERM at its timeout.
				start, ok1 := k.recordedSeconds(t, "sleep-start")
				term, ok2 := k.recordedSeconds(t, "sleep-term")
				if !ok1 || !ok2 {
					t.Fatalf("the hanging hook did not record its start and its SIGTERM")
				}
				if d := term - start; d < float64(tc.timeout)-0.5 || d > float64(tc.timeout)+5 {
					t.Errorf("the hook was stopped %.2fs after it started, want about its timeout, %ds", d, tc.timeout)
				}
			}
			for _, r := range api.Requests() {
				if r.Dialect == fakemodel.Other {
					t.Errorf("a request to elsewhere: %s %s", r.Method, r.Path)
				}
			}
		})
	}
}

// TestClaudeCode_HookInput records what a PreToolUse hook reads on stdin.
func TestClaudeCode_HookInput(t *testing.T) {
	Require(t, Claude)
	k := newHookKit(t)
	api := fakemodel.Start([]fakemodel.Turn{
		fakemodel.ToolCall("Bash", map[string]any{"command": "true", "description": "nothing"}),
		fakemodel.Say("all done"),
	})
	defer api.Close()
	if err := k.WriteFile(k.ClaudeSettingsPath(), ClaudeSettings("Bash", ClaudeHook{Command: k.hook("deny.sh")}), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := k.RunClaude(context.Background(), clientTimeout, api.URL, "do nothing", "--permission-mode", "bypassPermissions")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("claude: %v %v", err, res)
	}
	in, err := os.ReadFile(filepath.Join(k.record, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"hook_event_name":"PreToolUse"`, `"tool_name":"Bash"`,
		`"tool_input":{"command":"true","description":"nothing"}`, `"tool_use_id":"toolu_fake0"`,
		`"permission_mode":"bypassPermissions"`, `"cwd":"` + k.Project + `"`, `"session_id":`, `"transcript_path":`} {
		if !strings.Contains(string(in), want) {
			t.Errorf("hook input lacks %s:\n%s", want, in)
		}
	}
}
