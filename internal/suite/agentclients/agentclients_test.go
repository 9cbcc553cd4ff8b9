//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestPinsMatchPackageJSON: Versions, which the tests check the clients
// against, are the pins .ci/deps installs.
func TestPinsMatchPackageJSON(t *testing.T) {
	b, err := os.ReadFile("../../../.ci/coding-agents/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	names := map[Client]string{Claude: "@anthropic-ai/claude-code", Codex: "@openai/codex",
		Gemini: "@google/gemini-cli", OpenCode: "opencode-ai"}
	for c, name := range names {
		if got := pkg.Dependencies[name]; got != Versions[c] {
			t.Errorf("%s: package.json pins %q, Versions says %q", name, got, Versions[c])
		}
	}
	for name, v := range pkg.Dependencies {
		if strings.ContainsAny(v, "^~*<> ") {
			t.Errorf("%s: %q is not an exact version", name, v)
		}
	}
}

// TestCodexTrustedHash: the hash of a hook Codex 0.169 accepted as trusted
// (measured with the command below; TestCodex_HookTrust runs it live).
func TestCodexTrustedHash(t *testing.T) {
	h := CodexHook{Event: "PreToolUse", Matcher: "*", Command: "/tmp/h6-cx/hooks/deny.sh", Timeout: 30}
	const want = "sha256:24002d735d0a90a97bd0657d76df76c357c00161c2e9b09b39590e5febd3b4eb"
	if got := h.TrustedHash(); got != want {
		t.Errorf("TrustedHash() = %s, want %s", got, want)
	}
	toml := h.TOML("/home/u/.codex/config.toml")
	for _, line := range []string{`[[hooks.PreToolUse]]`, `matcher = "*"`, `[[hooks.PreToolUse.hooks]]`,
		`command = "/tmp/h6-cx/hooks/deny.sh"`, `timeout = 30`,
		`[hooks.state."/home/u/.codex/config.toml:pre_tool_use:0:0"]`, `trusted_hash = "` + want + `"`} {
		if !strings.Contains(toml, line+"\n") {
			t.Errorf("TOML lacks the line %s:\n%s", line, toml)
		}
	}
}

// TestSandboxRun_AsTheUserWithADeadline: a run is the sandbox's user, in
// the project folder, with the environment given; at its deadline the
// whole process group is killed, a child that holds stdout included.
func TestSandboxRun_AsTheUserWithADeadline(t *testing.T) {
	testenvRoot(t)
	s := New(t)
	if err := s.WriteFile(filepath.Join(s.Home, ".config", "x", "f"), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), 30*time.Second, []byte("in"), []string{"EXTRA=1"},
		"/bin/sh", "-c", `id -u; pwd; echo "$HOME $EXTRA"; cat; cat "$HOME/.config/x/f"`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %v", err, res)
	}
	want := strings.Join([]string{itoa(s.User.UID), s.Project, s.Home + " 1", "inhi"}, "\n")
	if got := strings.TrimSpace(string(res.Stdout)); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	res, err = s.Run(context.Background(), time.Second, nil, nil, "/bin/sh", "-c", "sleep 60 & sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Elapsed > 15*time.Second {
		t.Errorf("a run past its deadline: %v", res)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func testenvRoot(t *testing.T) { testenv.RequireRoot(t, "run commands as the user "+UserName) }

// TestSandboxRun_CallersCommand: with Command set (as to systemdtest's
// UserManager.Command), the run is the caller's command, moved to the
// project folder, with the caller's XDG_RUNTIME_DIR kept and the
// sandbox's HOME and XDG folders in place of the caller's.
func TestSandboxRun_CallersCommand(t *testing.T) {
	testenvRoot(t)
	s := New(t)
	s.Command = func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/elsewhere", "XDG_CONFIG_HOME=/elsewhere/.config",
			"XDG_RUNTIME_DIR=/run/user/4242"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: uint32(s.User.UID), Gid: uint32(s.User.GID), Groups: []uint32{}}}
		return cmd
	}
	res, err := s.Run(context.Background(), 30*time.Second, nil, nil,
		"/bin/sh", "-c", `pwd; echo "$HOME $XDG_CONFIG_HOME $XDG_RUNTIME_DIR"; id -u`)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %v", err, res)
	}
	want := strings.Join([]string{s.Project, s.Home + " " + filepath.Join(s.Home, ".config") + " /run/user/4242",
		itoa(s.User.UID)}, "\n")
	if got := strings.TrimSpace(string(res.Stdout)); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
}
