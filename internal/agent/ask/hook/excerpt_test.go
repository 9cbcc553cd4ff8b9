package hook

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// TestExcerpt_X3: a long text keeps its head and its tail and says how
// many bytes between them are not shown; a short one is only cleaned.
func TestExcerpt_X3(t *testing.T) {
	for _, tt := range []struct {
		name, in    string
		limit       int
		want        []string // substrings, in order
		changed     bool
		wantExactly string
	}{
		{name: "short", in: "ls -la\ncat x", limit: 100, wantExactly: "ls -la\ncat x"},
		{name: "cleaned", in: "rm\u202e -rf", limit: 100, wantExactly: "rm -rf", changed: true},
		{name: "long_keeps_tail", in: strings.Repeat("a", 5000) + "\necho hidden-tail >> MARK", limit: 300,
			want: []string{"aaaa", "bytes not shown", "echo hidden-tail >> MARK"}, changed: true},
		{name: "multibyte_edges", in: strings.Repeat("é", 3000), limit: 201, want: []string{"é", "not shown", "é"}, changed: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := Excerpt(tt.in, tt.limit)
			if len(got) > tt.limit || changed != tt.changed || !utf8.ValidString(got) {
				t.Fatalf("Excerpt = %q (%d bytes, changed %v); limit %d, want changed %v", got, len(got), changed, tt.limit, tt.changed)
			}
			if tt.wantExactly != "" && got != tt.wantExactly {
				t.Fatalf("Excerpt = %q, want %q", got, tt.wantExactly)
			}
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("Excerpt = %q; want %q (in order)", got, w)
				}
				rest = rest[i+len(w):]
			}
			if tt.changed && len(tt.in) > tt.limit {
				// The count is right: head + tail + omitted = the cleaned whole.
				m := regexp.MustCompile(`\[… (\d+) bytes not shown …\]`).FindStringSubmatch(got)
				if m == nil {
					t.Fatalf("no count in %q", got)
				}
				n, _ := strconv.Atoi(m[1])
				head, tail, _ := strings.Cut(got, marker(n))
				clean, _ := sanitize.Block(tt.in, 1<<20)
				if len(head)+len(tail)+n != len(clean) || !strings.HasPrefix(clean, head) || !strings.HasSuffix(clean, tail) {
					t.Fatalf("head %d + tail %d + omitted %d != %d", len(head), len(tail), n, len(clean))
				}
			}
		})
	}
}

// TestQuestionForLongCommand_X3: the hook's card of a 103 KB Bash command
// shows the command's last line, not only its first 2 KB.
func TestQuestionForLongCommand_X3(t *testing.T) {
	cmd := strings.Repeat("echo filler-line\n", 6000) + "echo hidden-tail >> MARK"
	in, _ := json.Marshal(map[string]string{"command": cmd})
	r := QuestionFor(PreToolUse{ToolName: "Bash", ToolInput: in, ToolUseID: "toolu_1", Cwd: "/home/u/app"})
	if !strings.Contains(r.Rationale, "echo hidden-tail >> MARK") || !strings.Contains(r.Rationale, "bytes not shown") ||
		!strings.HasSuffix(r.Rationale, "in /home/u/app") || len(r.Rationale) > sanitize.RationaleBytes {
		t.Fatalf("rationale (%d bytes) hides the tail or the count:\n%s", len(r.Rationale), r.Rationale)
	}
	r.RequestID = "hook-1"
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}
