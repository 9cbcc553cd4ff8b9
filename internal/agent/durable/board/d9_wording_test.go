package board

import (
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestAsk_D9_DecidedKeyOtherWording: a tool-call key decided once keeps
// its decision for the same question only. Asked again under the same
// key with other wording (another command: an asker that reuses keys,
// a model API that gives two calls one id), it is a new question: the
// first call's yes does not let the second through unasked. The same
// wording again still gets the decision (D9).
func TestAsk_D9_DecidedKeyOtherWording(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	first := r.ask(t, wire.AskRequest{RequestID: "w1", Kind: wire.AskYesNo, Title: "Run: ls", Rationale: "$ ls", ToolCall: "claude-toolu_0"})
	status, body := r.Post(t, wire.AnswerPath, durabletest.Answer(first, 1, "yes"))
	durabletest.Want(t, status, body, 200, "")

	same := r.ask(t, wire.AskRequest{RequestID: "w2", Kind: wire.AskYesNo, Title: "Run: ls", Rationale: "$ ls", ToolCall: "claude-toolu_0"})
	if !same.Existing || same.Status != wire.StatusAnswered || same.OptionIDs[0] != "yes" {
		t.Fatalf("D9: the same call again got %+v, want the decision", same)
	}
	for _, other := range []wire.AskRequest{
		{RequestID: "w3", Kind: wire.AskYesNo, Title: "Run: rm -rf ~", Rationale: "$ rm -rf ~", ToolCall: "claude-toolu_0"},
		{RequestID: "w4", Kind: wire.AskYesNo, Title: "Run: ls", Rationale: "$ ls", Detail: "$ ls; rm -rf ~", Shortened: true, ToolCall: "claude-toolu_0"},
	} {
		rep := r.ask(t, other)
		if rep.Existing || rep.Status != wire.StatusPending || rep.Question == first.Question {
			t.Fatalf("another call under a decided key (%q) got %+v, want a new question", other.Title, rep)
		}
		status, body := r.Post(t, wire.AnswerPath, durabletest.Answer(rep, 1, "no"))
		durabletest.Want(t, status, body, 200, "")
	}
}
