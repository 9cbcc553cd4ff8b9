package wire

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidName: the one rule for a durable agent's name, which the agent
// (its instance name) and the bridge (sources.json, hosted boards) share.
func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"desk", true},
		{"a", true},
		{"0", true},
		{"app.v2_beta-1", true},
		{"raft.agent-1.a1b2c3", true},
		{strings.Repeat("a", MaxNameBytes), true},
		{"", false},
		{strings.Repeat("a", MaxNameBytes+1), false},
		{"Desk", false},
		{"-desk", false},
		{".desk", false},
		{"_desk", false},
		{"my desk", false},
		{"desk/1", false},
		{"../etc", false},
		{"dé", false},
		{"a\nb", false},
		{"desk\n", false},
	}
	for _, tt := range tests {
		if got := ValidName(tt.name); got != tt.want {
			t.Errorf("ValidName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNameRuleWords: NameRule says what ValidName checks: the regular
// expression the agent used before the rule had one home, over every
// byte in every position.
func TestNameRuleWords(t *testing.T) {
	re := regexp.MustCompile(`\A[a-z0-9][a-z0-9._-]{0,63}\z`)
	for c := range 256 {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}), "a" + string([]byte{byte(c)}) + "z"} {
			if got, want := ValidName(s), re.MatchString(s); got != want {
				t.Errorf("ValidName(%q) = %v, the rule in words says %v", s, got, want)
			}
		}
	}
	if !strings.Contains(NameRule, "1 to 64") || MaxNameBytes != 64 {
		t.Errorf("NameRule %q does not say the limit %d", NameRule, MaxNameBytes)
	}
}
