package ask

import (
	"strings"
	"testing"
)

// TestHookClaudeParserDifferential: the hook input is
// Claude Code's open schema, but a parse that differs from the one that
// runs the tool would show the human one call and run another. A name in
// another case is not the field ("Tool_Name" is not tool_name), and a name
// given twice or invalid UTF-8 anywhere, tool_input included, is denied
// before anything is asked.
func TestHookClaudeParserDifferential(t *testing.T) {
	push := sample(t, "bash_git_push.json")
	for _, tc := range []struct{ name, input, reason string }{
		{"wrong_case_tool_name",
			`{"hook_event_name":"PreToolUse","Tool_Name":"Bash","tool_input":{"command":"ls"}}`,
			"handles PreToolUse"},
		{"wrong_case_event",
			`{"Hook_Event_Name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`,
			"handles PreToolUse"},
		{"command_twice_in_tool_input",
			`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf ~"}}`,
			"could not read the hook input"},
		{"tool_name_twice",
			`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_name":"Bash","tool_input":{"command":"rm -rf ~","file_path":"/etc/hosts"}}`,
			"could not read the hook input"},
		{"tool_input_twice",
			strings.Replace(push, `"tool_input": {`, `"tool_input": {"command": "true"}, "tool_input": {`, 1),
			"could not read the hook input"},
		{"invalid_utf8",
			"{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls \xff\"}}",
			"could not read the hook input"},
		{"lone_surrogate",
			`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls \ud800"}}`,
			"could not read the hook input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := wait(t, runAsk(nil, tc.input, "--hook", "claude"))
			d := decode(t, res.stdout)
			if res.code != 0 || d.PermissionDecision != "deny" || !strings.Contains(d.PermissionDecisionReason, tc.reason) {
				t.Fatalf("exit %d %+v; want deny saying %q", res.code, d, tc.reason)
			}
		})
	}
	// Unknown fields stay allowed: the schema is Claude Code's, and open.
	res := wait(t, runAsk(nil, strings.Replace(push, "{", `{"a_future_field": {"x": 1},`, 1), "--hook", "claude"))
	if d := decode(t, res.stdout); !strings.Contains(d.PermissionDecisionReason, "cannot reach the agent") {
		t.Fatalf("an unknown field stopped the hook before asking: %+v", d)
	}
}
