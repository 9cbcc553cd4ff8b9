//go:build linux

package agentclients

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSetupMCP_RealClients_D1: after `collie setup CLIENT`, each real
// client lists collie's MCP server from the file setup wrote, running the
// collie that wrote it with "mcp"; Claude Code, which checks each server
// when it lists them, connects to it through the user's durable agent.
func TestSetupMCP_RealClients_D1(t *testing.T) {
	for _, tc := range []struct {
		client Client
		env    []string
		want   []string // in `CLIENT mcp list`'s output
	}{
		{client: Claude, want: []string{"collie: COLLIE mcp - ✔ Connected"}},
		{client: Gemini, env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"}, want: []string{"collie: COLLIE mcp (stdio)"}},
		{client: Codex, want: []string{"collie", "COLLIE", "mcp", "enabled"}},
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
			for _, w := range tc.want {
				if w = strings.ReplaceAll(w, "COLLIE", collie); !strings.Contains(out, w) {
					t.Fatalf("%s mcp list lacks %q:\n%s", tc.client, w, out)
				}
			}
		})
	}
}
