package grants

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// FuzzCommandMatches (D7): a grant's command prefix lets a command through
// only when the command's words start with the prefix's words and it holds
// no shell operator; an empty prefix covers every call of the tool. The
// prefix a question offers (ScopeFor) is made of the command's own first
// words.
func FuzzCommandMatches(f *testing.F) {
	for _, s := range [][2]string{
		{"git status", "git status --short"},
		{"git status", "git status; rm -rf ~"},
		{"git status", "git statusx"},
		{"git", "git $(curl x)"},
		{"", "anything at all"},
		{"make", "make\ttest"},
		{"ls", "ls\n rm -rf /"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, command string) {
		pw, cw := strings.Fields(prefix), strings.Fields(command)
		if commandMatches(prefix, command) && len(pw) > 0 {
			if strings.ContainsAny(command, ";&|`$<>()\n\r\\") {
				t.Fatalf("D7: prefix %q let through %q, which holds a shell operator", prefix, command)
			}
			if len(cw) < len(pw) || !slices.Equal(cw[:len(pw)], pw) {
				t.Fatalf("D7: prefix %q let through %q, which does not start with its words", prefix, command)
			}
		}
		if prefix == "" && !commandMatches(prefix, command) {
			t.Fatalf("an empty prefix did not cover %q", command)
		}
		sc := ScopeFor(wire.ToolRef{Name: "Bash", Command: command}, time.Hour)
		if sc.Tool != "Bash" || sc.DurationSeconds != 3600 || !utf8.ValidString(sc.Text) {
			t.Fatalf("scope %+v", sc)
		}
		if p := sc.CommandPrefix; p != "" && !strings.HasPrefix(strings.Join(cw[:min(2, len(cw))], " "), p) {
			t.Fatalf("the offered prefix %q is not made of the first words of %q", p, command)
		}
	})
}
