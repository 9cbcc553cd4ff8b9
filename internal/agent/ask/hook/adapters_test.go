package hook

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenCodeInput: the adapter reads what collie's OpenCode plugin
// sends: OpenCode's tool names and input keys, and its names of collie's
// own MCP tools.
func TestOpenCodeInput(t *testing.T) {
	h := OpenCode
	in := PreToolUse{HookEventName: "tool.execute.before", ToolName: "edit", ToolUseID: "toolu_1",
		ToolInput: json.RawMessage(`{"filePath": "/p/a.go", "oldString": "x := 1", "newString": "x := 2"}`)}
	q := questionFor(h, in)
	if q.Title != "OpenCode: Edit /p/a.go" || !strings.Contains(q.Rationale, "- x := 1\n+ x := 2") || !strings.HasPrefix(q.ToolCall, "opencode-toolu_1-") {
		t.Fatalf("%q %q %q", q.Title, q.Rationale, q.ToolCall)
	}
	if !h.isCollieMCPTool("collie_ask_yes_no") || h.isCollieMCPTool("other_ask_yes_no") {
		t.Fatal("collie's own MCP tools, as OpenCode names them, are not recognised")
	}
}
