//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestClaudeCode_PermissionPromptTool records what Claude Code 2.1.328
// does with each answer a --permission-prompt-tool can give, from a
// stand-in prompt server (testdata/mcp/approve-probe.mjs) in -p default
// mode, where a Bash call that writes needs a prompt: whether the call
// ran, and what the model was told. collie mcp's approve only ever answers
// allow or deny; the rest says whether a broken prompt server could let a
// call through. It cannot: Claude Code blocks the call on a tool error,
// a protocol error, a server that died, and any text that is not a
// well-formed allow or deny.
func TestClaudeCode_PermissionPromptTool(t *testing.T) {
	Require(t, Claude)
	sdk := filepath.Join(Prefix(), "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "server", "stdio.js")); err != nil {
		testenv.Unavailablef(t, "@modelcontextprotocol/sdk is not installed in %s (run .ci/deps as root)", Prefix())
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not installed (see .ci/deps)")
	}
	probe, err := os.ReadFile("testdata/mcp/approve-probe.mjs")
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		mode     string
		permMode string // Claude Code's --permission-mode; "" is default
		python   bool   // the call writes the mark with python3, not the shell's redirection
		wantRan  bool
		wantIn   string // in the tool's result sent back to the model, when it did not run
	}{
		{mode: "allow", wantRan: true},
		{mode: "deny", wantIn: "PROBE-DENY"},
		{mode: "tool-error", wantIn: "PROBE-TOOL-ERROR"},
		// A tool error is a deny whatever its text says.
		{mode: "tool-error-allow", wantIn: `"behavior":"allow"`},
		{mode: "not-json", wantIn: "returned an invalid permission result"},
		// updatedInput is optional: an allow without it runs the call as
		// the model gave it (collie mcp's allow always carries the input
		// the card showed).
		{mode: "allow-no-input", wantRan: true},
		{mode: "empty", wantIn: "returned an invalid result"},
		{mode: "rpc-error", wantIn: "PROBE-RPC-ERROR"},
		// The server dying in the middle of the call.
		{mode: "exit", wantIn: "Connection closed"},
		// Where Claude Code consults the prompt at all: not in
		// bypassPermissions (the call runs over a deny), nor in dontAsk
		// (it denies by itself, unasked: "don't ask mode"). In acceptEdits
		// a shell command that only writes a file in the project folder
		// is an edit, run unasked; a program run (python3) is asked.
		{mode: "deny", permMode: "bypassPermissions", wantRan: true},
		{mode: "deny", permMode: "dontAsk", wantIn: "don't ask mode"},
		{mode: "deny", permMode: "acceptEdits", wantRan: true},
		{mode: "deny", permMode: "acceptEdits", python: true, wantIn: "PROBE-DENY"},
	}
	for _, tc := range rows {
		if tc.permMode == "" {
			tc.permMode = "default"
		}
		name := tc.mode + " in " + tc.permMode
		if tc.python {
			name += ", python3"
		}
		t.Run(name, func(t *testing.T) {
			s := New(t)
			script := filepath.Join(s.Root, "approve-probe.mjs")
			if err := s.WriteFile(script, probe, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"probe": map[string]any{
				"command": node, "args": []string{script, sdk, tc.mode}}}})
			config := filepath.Join(s.Root, "mcp.json")
			if err := s.WriteFile(config, cfg, 0o644); err != nil {
				t.Fatal(err)
			}
			mark := filepath.Join(s.Project, "MARK")
			command := "echo ran > " + mark
			if tc.python {
				command = fmt.Sprintf("python3 -c 'open(%q, \"w\").write(\"ran\")'", mark)
			}
			api := fakemodel.Start([]fakemodel.Turn{
				fakemodel.ToolCall("Bash", map[string]any{"command": command, "description": "make a mark"}),
				fakemodel.Say("all done"),
			})
			defer api.Close()
			res, err := s.RunClaude(context.Background(), clientTimeout, api.URL, "make a mark",
				"--permission-mode", tc.permMode, "--mcp-config", config, "--permission-prompt-tool", "mcp__probe__approve")
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(mark)
			ran := statErr == nil
			var got string
			if loop := api.TurnRequests(); len(loop) >= 2 {
				if tr, ok := loop[1].ToolResult("toolu_fake0"); ok {
					got = fmt.Sprintf("error=%v %q", tr.IsError, tr.Content)
					if !ran && (!tr.IsError || !strings.Contains(tr.Content, tc.wantIn)) {
						t.Errorf("the model got %s, want an error containing %q", got, tc.wantIn)
					}
				}
			}
			t.Logf("%s: ran %v, exit %d, the model got %s", name, ran, res.ExitCode, got)
			if ran != tc.wantRan {
				t.Errorf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
			}
		})
	}
}
