package ask

import (
	"encoding/json"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable/board"
)

// hookInputRunning is hookInput with command as the call's input.
func hookInputRunning(h *HookClient, id, command string) string {
	return strings.Replace(hookInput(h, id), `"make deploy"`, mustJSON(command), 1)
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestHook_D9_OneIDTwoCalls: a model API that gives two different calls
// one id (a proxy, a local server numbering each reply's calls from 0)
// gets two questions, for every adapter: the yes to the first call does
// not let the second, another command, through unasked. The same call
// again (its input spaced otherwise) is still the same question.
func TestHook_D9_OneIDTwoCalls(t *testing.T) {
	a := startAgent(t, board.Options{})
	for _, h := range hookRows() {
		t.Run(h.Name, func(t *testing.T) {
			id := "toolu_same_" + h.Name
			first := hook.QuestionFor(mustHookInput(t, hookInputRunning(h, id, "make deploy")))
			again := mustHookInput(t, hookInputRunning(h, id, "make deploy"))
			again.ToolInput = json.RawMessage(strings.ReplaceAll(string(again.ToolInput), ":", ": "))
			if k := hook.QuestionFor(again).ToolCall; k != first.ToolCall {
				t.Errorf("the same call spaced otherwise has the key %q, want %q", k, first.ToolCall)
			}

			ch := runAsk(a, hookInputRunning(h, id, "make deploy"), "--hook", h.Name, "--timeout", "20s")
			a.answer(t, ans(a.open(t), "yes"))
			if allow, reason := decisionOf(t, h, wait(t, ch)); !allow {
				t.Fatalf("the first call: deny %q after a yes", reason)
			}
			ch = runAsk(a, hookInputRunning(h, id, "rm -rf ~"), "--hook", h.Name, "--timeout", "20s")
			q := a.open(t) // a question of its own, or the test fails here
			if !strings.Contains(q.Title, "rm -rf ~") {
				t.Fatalf("the open question is %q, want the second call's", q.Title)
			}
			r := ans(q, "no")
			r.Reason = "not that one"
			a.answer(t, r)
			if allow, reason := decisionOf(t, h, wait(t, ch)); allow || !strings.Contains(reason, "not that one") {
				t.Fatalf("the second call: allow %v (%q), want the no", allow, reason)
			}
		})
	}
}

func mustHookInput(t *testing.T, s string) hook.PreToolUse {
	t.Helper()
	var in hook.PreToolUse
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		t.Fatal(err)
	}
	return in
}
