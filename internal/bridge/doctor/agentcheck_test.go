package doctor

import "testing"

// TestAgentCheckOutput_L4: the agent-config row reads collie-agent
// --check-config's error and hint lines (age's form, internal/cli) as one
// reason, and still reads a bare "collie-agent: " line.
func TestAgentCheckOutput_L4(t *testing.T) {
	for _, tt := range []struct{ name, stderr, want string }{
		{"error_only", "collie-agent: error: /c/demo.toml, line 2: unknown setting \"titel\"\n", `/c/demo.toml, line 2: unknown setting "titel"`},
		{"error_and_hint", "collie-agent: error: the name \"X\" is not valid\ncollie-agent: hint: use 1 to 64 of a-z\n", `the name "X" is not valid; use 1 to 64 of a-z`},
		{"log_lines_before", "time=... level=INFO msg=x\ncollie-agent: error: cannot start: boom\n", "cannot start: boom"},
		{"bare", "collie-agent: boom\n", "boom"},
	} {
		if got := agentCheckOutput(tt.stderr); got != tt.want {
			t.Errorf("%s: %q; want %q", tt.name, got, tt.want)
		}
	}
}
