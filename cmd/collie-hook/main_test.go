package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

const input = `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"},"tool_use_id":"toolu_1"}`

func runHook(t *testing.T, env map[string]string, args ...string) (int, hook.Decision, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(input), &out, &errb, func(k string) string { return env[k] })
	var o hook.Output
	if out.Len() > 0 {
		if err := json.Unmarshal(out.Bytes(), &o); err != nil {
			t.Fatalf("stdout %q: %v", out.String(), err)
		}
	}
	return code, o.HookSpecificOutput, errb.String()
}

// TestHookProgram_DeniesOnFailure_D1: the hook program denies, in the
// client's own output, whenever no question can be asked: no agent to
// find, an incomplete agent environment (never the human's socket), an
// agent environment without the collie that asks the bridge for it.
func TestHookProgram_DeniesOnFailure_D1(t *testing.T) {
	run := t.TempDir()
	raftDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(raftDir, "raft"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no_agent", map[string]string{"XDG_RUNTIME_DIR": run}, "no agent socket in " + filepath.Join(run, "desk")},
		{"incomplete_agent_environment", map[string]string{"XDG_RUNTIME_DIR": run, "COLLIE_AGENT_SOCKET": "/x.sock", "SLOCK_HOME": "/h"},
			"not a complete agent environment (incomplete agent markers: SLOCK_CLI_TRANSPORT_DIR, SLOCK_AGENT_ID not set)"},
		{"agent_environment_without_collie", map[string]string{"SLOCK_CLI_TRANSPORT_DIR": raftDir, "SLOCK_HOME": t.TempDir(), "SLOCK_AGENT_ID": "a1"},
			"an agent asks through collie, and no collie is installed with"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, d, _ := runHook(t, tc.env, "--hook", "claude", "--timeout", "10s")
			if code != 0 || d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, tc.want) {
				t.Fatalf("exit %d %+v, want a deny saying %q", code, d, tc.want)
			}
		})
	}
	// Codex reads exit status 2 as the block, the reason on stderr.
	code, _, stderr := runHook(t, map[string]string{"XDG_RUNTIME_DIR": run}, "--hook", "codex")
	if code != 2 || !strings.Contains(stderr, "no agent socket") {
		t.Fatalf("codex: exit %d %q", code, stderr)
	}
}

// TestHookProgram_Usage: a mistake on the command line is exit status 2
// with a sentence saying what to give; --help is the usage.
func TestHookProgram_Usage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give --hook CLIENT, one of claude, codex, gemini, opencode"},
		{[]string{"--hook", "vim"}, 2, `--hook "vim" is not known`},
		{[]string{"--hook", "claude", "--timeout", "-1s"}, 2, "--timeout must not be negative"},
		{[]string{"--hook", "claude", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--nope"}, 2, "flag provided but not defined"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb, func(string) string { return "" })
		if code != tc.code || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d saying %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, strings.NewReader(""), &out, &out, nil); code != 0 || !strings.Contains(out.String(), "collie-hook --hook CLIENT") {
		t.Fatalf("--help: %d %q", code, out.String())
	}
}

// TestHookProgram_AgentEnvironmentRunsCollie: in an agent environment
// the hook program hands the call to the collie installed beside it
// (collie ask --hook, which asks the bridge over the agent's session):
// with no session stored, that collie's deny is what the client reads.
func TestHookProgram_AgentEnvironmentRunsCollie(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds collie")
	}
	bin := t.TempDir()
	for _, c := range []string{"collie", "collie-hook"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, c), "../"+c).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", c, err, out)
		}
	}
	transport := t.TempDir()
	if err := os.WriteFile(filepath.Join(transport, "raft"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "collie-hook"), "--hook", "claude", "--timeout", "10s")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SLOCK_CLI_TRANSPORT_DIR=" + transport, "SLOCK_HOME=" + t.TempDir(), "SLOCK_AGENT_ID=a1"}
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	var o hook.Output
	if err != nil || json.Unmarshal(out, &o) != nil {
		t.Fatalf("%v %q", err, out)
	}
	if d := o.HookSpecificOutput; d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, "this agent has no collie session") {
		t.Fatalf("%+v, want collie's deny for an agent without a session", d)
	}
}
