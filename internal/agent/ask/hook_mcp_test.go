package ask

import (
	"strings"
	"testing"
)

// TestHookLetsCollieMCPToolsThrough_D1: collie setup installs the hook
// (which gates MCP tools) and collie mcp together, so a call of one of
// collie mcp's own tools, which asks the user itself, passes the hook
// without a card about the card. Only those tools, as each client names
// them for the server "collie": another server's tool of the same name,
// another tool of collie's server, or another client's spelling is asked
// as before (here: denied, no agent to ask).
func TestHookLetsCollieMCPToolsThrough_D1(t *testing.T) {
	for _, tc := range []struct {
		client, event, tool string
		allowed             bool
	}{
		{"claude", "PreToolUse", "mcp__collie__ask_yes_no", true},
		{"claude", "PreToolUse", "mcp__collie__notify", true},
		{"claude", "PreToolUse", "mcp__collie__approve", true},
		{"claude", "PreToolUse", "mcp__collie__run_shell", false},
		{"claude", "PreToolUse", "mcp__github__ask_yes_no", false},
		{"claude", "PreToolUse", "mcp_collie_ask_yes_no", false},
		{"claude", "PreToolUse", "mcp__collie__ask_yes_no_and_delete", false},
		{"codex", "PreToolUse", "mcp__collie__ask_choice", true},
		{"codex", "PermissionRequest", "mcp__collie__ask_text", true},
		{"codex", "PreToolUse", "mcp__other__ask_choice", false},
		{"gemini", "BeforeTool", "mcp_collie_ask_form", true},
		{"gemini", "BeforeTool", "mcp__collie__ask_form", false},
		{"gemini", "BeforeTool", "mcp_collie2_ask_form", false},
	} {
		t.Run(tc.client+"_"+tc.event+"_"+tc.tool, func(t *testing.T) {
			in := `{"session_id":"s1","hook_event_name":"` + tc.event + `","tool_name":"` + tc.tool + `","tool_input":{"question":"Ship it?"}}`
			res := wait(t, runAsk(nil, in, "--hook", tc.client))
			denied := strings.Contains(res.stdout, "deny") || res.code == 2
			if denied == tc.allowed || (!tc.allowed && !strings.Contains(res.stdout+res.stderr, "reach")) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", res.code, res.stdout, res.stderr)
			}
		})
	}
}
