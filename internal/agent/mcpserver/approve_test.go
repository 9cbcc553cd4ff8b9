package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestApprove_D1: Claude Code's --permission-prompt-tool. The card names
// the tool and shows its input; the tool_use_id is the question's
// tool-call key (one card, one push per tool call, D9); yes allows with
// the input exactly as sent, anything else denies with a reason, never
// a tool error.
func TestApprove_D1(t *testing.T) {
	input := `{"command":"git push origin main","description":"Push the release","timeout":12345678901234567890}`
	for _, tt := range []struct {
		name   string
		act    func(r *rig)
		want   string // the decision's text, exactly or (deny) its start
		prefix bool
	}{
		{"yes", func(r *rig) { r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}}) },
			`{"behavior":"allow","updatedInput":` + input + `}`, false},
		{"no_with_reason", func(r *rig) { r.answer(wire.AnswerRequest{OptionIDs: []string{"no"}, Reason: "wrong branch"}) },
			`{"behavior":"deny","message":"The user denied this tool call on their device: wrong branch"}`, false},
		{"timed_out", func(r *rig) { time.Sleep(time.Minute) },
			`{"behavior":"deny","message":"Collie denies the tool call: no answer from the user within 1m0s; denied by default`, true},
		{"withdrawn", func(r *rig) {
			cv, q := r.only()
			r.post(wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab"}, Conversation: cv, Question: q.ID})
		}, `{"behavior":"deny","message":"Collie denies the tool call: the question was withdrawn`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{Timeout: time.Minute})
				// A field Claude Code may add (its schema is open) is ignored.
				args := json.RawMessage(`{"tool_name":"Bash","input":` + input + `,"tool_use_id":"toolu_01ABC","permission_suggestions":[]}`)
				ch := r.call(t.Context(), "approve", args, nil)
				synctest.Wait()
				_, q := r.only()
				if q.Title != "Claude Code: Run: git push origin main" || !strings.HasPrefix(q.ToolCall, "claude-toolu_01ABC-") ||
					!strings.Contains(q.Rationale, "Push the release\n\n$ git push origin main") || !strings.HasSuffix(q.Rationale, "in /home/u/src/app") {
					t.Fatalf("card %+v", q)
				}
				tt.act(r)
				res, _, text := r.result(ch)
				if res.IsError || text != tt.want && !(tt.prefix && strings.HasPrefix(text, tt.want)) {
					t.Fatalf("decision %s (error %v), want %s", text, res.IsError, tt.want)
				}
			})
		})
	}
}

// TestApproveLongInput_X3: a 1 MB Write shows its head and its tail with
// the bytes not shown counted, and a yes allows the whole input unchanged.
func TestApproveLongInput_X3(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		content := strings.Repeat("filler line\n", 90000) + "echo hidden-tail >> MARK\n"
		in, _ := json.Marshal(map[string]string{"file_path": "/home/u/src/app/run.sh", "content": content})
		args, _ := json.Marshal(map[string]any{"tool_name": "Write", "input": json.RawMessage(in), "tool_use_id": "toolu_big"})
		ch := r.call(t.Context(), "approve", json.RawMessage(args), nil)
		synctest.Wait()
		_, q := r.only()
		if !strings.Contains(q.Rationale, "echo hidden-tail >> MARK") || !strings.Contains(q.Rationale, "bytes not shown") || len(q.Rationale) > sanitize.RationaleBytes {
			t.Fatalf("the card of a %d-byte file hides its tail:\n%s", len(content), q.Rationale)
		}
		r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
		_, _, text := r.result(ch)
		var d struct {
			Behavior     string
			UpdatedInput json.RawMessage
		}
		if err := json.Unmarshal([]byte(text), &d); err != nil || d.Behavior != "allow" || string(d.UpdatedInput) != string(in) {
			t.Fatalf("decision %.200s: %v", text, err)
		}
	})
}

// TestApproveBadInput: what cannot be shown is denied, never allowed and
// never a crash.
func TestApproveBadInput(t *testing.T) {
	for _, tt := range []struct{ name, args, want string }{
		{"no_tool_name", `{"input":{}}`, "needs tool_name"},
		{"input_not_object", `{"tool_name":"Bash","input":"rm -rf /"}`, "needs tool_name and an input object"},
		{"name_twice", `{"tool_name":"Read","tool_name":"Bash","input":{}}`, "could not read the tool call"},
		{"over_cap", `{"tool_name":"Write","input":{"content":"` + strings.Repeat("x", approveCap) + `"}}`, "over the 8388608 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{})
				res, _, text := r.result(r.call(t.Context(), "approve", json.RawMessage(tt.args), nil))
				if res.IsError || !strings.HasPrefix(text, `{"behavior":"deny"`) || !strings.Contains(text, tt.want) {
					t.Fatalf("%.300s", text)
				}
				if len(r.open()) != 0 {
					t.Fatal("a bad call asked a question")
				}
			})
		})
	}
}
