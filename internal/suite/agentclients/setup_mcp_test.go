//go:build linux

package agentclients

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// TestSetupMCP_RealClients_D1: after `collie setup CLIENT`, each real
// client lists collie's MCP server from the file setup wrote, running the
// collie that wrote it with "mcp"; Claude Code, which checks each server
// when it lists them, connects to it through the user's durable agent,
// and so does OpenCode, which also checks the entry against its schema.
func TestSetupMCP_RealClients_D1(t *testing.T) {
	for _, tc := range []struct {
		client Client
		env    []string
		want   []string // in `CLIENT mcp list`'s output
	}{
		{client: Claude, want: []string{"collie: COLLIE mcp - ✔ Connected"}},
		{client: Gemini, env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}, want: []string{"collie: COLLIE mcp (stdio)"}},
		{client: Codex, want: []string{"collie", "COLLIE", "mcp", "enabled"}},
		// OpenCode: setup also writes its plugin; mcp list still loads it.
		{client: OpenCode, env: []string{"OPENCODE_DISABLE_MODELS_FETCH=true", "OPENCODE_DISABLE_AUTOUPDATE=true"}, want: []string{"✓ collie", "connected", "COLLIE mcp"}},
	} {
		t.Run(string(tc.client), func(t *testing.T) {
			cmd := Require(t, tc.client)
			s := New(t)
			s.Env = append(s.Env, "CODEX_HOME="+filepath.Join(s.Home, ".codex"))
			collie := installCollie(t, s)
			res, err := s.Run(context.Background(), 30*time.Second, nil, nil, collie, "setup", string(tc.client))
			if err != nil || res.ExitCode != 0 || !strings.Contains(string(res.Stdout), "as its MCP server") {
				t.Fatalf("collie setup: %v %v", err, res)
			}
			startAgent(t, s)
			env := append([]string{"XDG_RUNTIME_DIR=" + filepath.Join(s.Home, "run")}, tc.env...)
			res, err = s.Run(context.Background(), 90*time.Second, nil, env, cmd, "mcp", "list")
			if err != nil {
				t.Fatal(err)
			}
			out := string(res.Stdout) + string(res.Stderr)
			t.Logf("%s mcp list:\n%s", tc.client, out)
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "COLLIE", collie); !strings.Contains(out, w) {
					t.Fatalf("%s mcp list lacks %q:\n%s", tc.client, w, out)
				}
			}
		})
	}
}

// TestClaudeCode_SetupBoth_OneCard_D1: with the hook and the MCP server
// that collie setup claude writes, in bypassPermissions mode (where the
// hook gates every MCP tool), the model's mcp__collie__ask_yes_no puts
// one card on the device, the question itself, not a card asking whether
// it may ask; the tap's yes reaches the model.
func TestClaudeCode_SetupBoth_OneCard_D1(t *testing.T) {
	Require(t, Claude)
	s := New(t)
	collie := installCollie(t, s)
	if res, err := s.Run(context.Background(), 30*time.Second, nil, nil, collie, "setup", "claude", "--timeout", "30s"); err != nil || res.ExitCode != 0 {
		t.Fatalf("collie setup: %v %v", err, res)
	}
	a := startAgent(t, s)
	s.Env = append(s.Env, "COLLIE_AGENT_SOCKET="+a.sock, "XDG_RUNTIME_DIR="+filepath.Join(s.Home, "run"))
	api := fakemodel.Start([]fakemodel.Turn{
		fakemodel.ToolCall("mcp__collie__ask_yes_no", map[string]any{"question": "Ship the release?"}),
		fakemodel.Say("all done"),
	})
	defer api.Close()
	done := make(chan Result, 1)
	go func() {
		res, err := s.RunClaude(context.Background(), clientTimeout, api.URL, "ask me", "--permission-mode", "bypassPermissions")
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	q, conv := a.question(t, 60*time.Second)
	if !strings.Contains(q.Title, "Ship the release?") {
		t.Fatalf("the first card is %q, not the model's question", q.Title)
	}
	a.answer(t, q, conv, "yes", "")
	res := <-done
	loop := api.TurnRequests()
	if res.ExitCode != 0 || len(loop) < 2 {
		t.Fatalf("%d requests of the agent loop\n%v", len(loop), res)
	}
	tr, ok := loop[1].ToolResult("toolu_fake0")
	if !ok || tr.IsError || !strings.Contains(tr.Content, `"answer":"yes"`) {
		t.Fatalf("the model got %+v (found %v)", tr, ok)
	}
}
