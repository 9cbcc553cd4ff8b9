package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Hostile tool input through collie mcp's tools: an escape sequence, a
// direction override and zero-width characters in the wording, and a
// command of about 100 KB whose last line is what a yes runs last.
const (
	hostileWords = "Deploy \x1b[8mhidden\x1b[0m \u202eniam\u202c to\u200b prod \u2066now\u2069\u200d"
	tailLine     = "echo hidden-tail >> MARK"
)

// TestHostileInput_X3_MCP: the card is cleaned and marked "Text
// shortened", its tail in view; approve's yes runs the input exactly as
// Claude Code sent it.
func TestHostileInput_X3_MCP(t *testing.T) {
	long := strings.Repeat("echo filler-line\n", 6000) + tailLine
	in, _ := json.Marshal(map[string]string{"command": long, "description": hostileWords})
	for _, tc := range []struct {
		tool string
		args any
		tail bool
	}{
		{"approve", json.RawMessage(mustJSON(map[string]any{"tool_name": "Bash", "input": json.RawMessage(in), "tool_use_id": "toolu_hostile"})), true},
		// The tool's schema holds details to 2048 bytes: no tail to lose.
		{"ask_yes_no", map[string]any{"question": hostileWords, "details": hostileWords}, false},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{})
				ch := r.call(t.Context(), tc.tool, tc.args, nil)
				synctest.Wait()
				_, q := r.only()
				for _, s := range []string{q.Title, q.Rationale} {
					if strings.ContainsAny(s, "\x1b\u202e\u202c\u2066\u2069\u200b\u200d") {
						t.Errorf("not cleaned: %q", s)
					}
				}
				if !q.Shortened || tc.tail && (!strings.Contains(q.Rationale, tailLine) || !strings.Contains(q.Rationale, "bytes not shown")) {
					t.Fatalf("X3: shortened %v, rationale:\n%s", q.Shortened, q.Rationale)
				}
				r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
				_, _, text := r.result(ch)
				if tc.tool != "approve" {
					return
				}
				var d struct {
					Behavior     string
					UpdatedInput json.RawMessage
				}
				if err := json.Unmarshal([]byte(text), &d); err != nil || d.Behavior != "allow" || string(d.UpdatedInput) != string(in) {
					t.Fatalf("decision %.200s: %v", text, err)
				}
			})
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
