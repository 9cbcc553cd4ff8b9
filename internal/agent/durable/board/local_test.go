package board

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestLocalConversation_D1: a local program (collie mcp, one conversation
// per client session) opens a conversation of its own, asks in it, adds
// messages that answer nothing, and closes it, which withdraws what it
// still asks. It cannot close a conversation it did not open.
func TestLocalConversation_D1(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	status, body := r.Post(t, wire.LocalOpenPath, wire.LocalOpenRequest{Title: "claude-code in ~/src/app"})
	durabletest.Want(t, status, body, 200, "")
	var open wire.LocalReply
	decode(t, body, &open)
	cv := durabletest.FindConv(r.Snapshot(t), open.Conversation)
	if cv == nil || cv.Title != "claude-code in ~/src/app" || cv.Closed {
		t.Fatalf("opened conversation %q: %+v", open.Conversation, cv)
	}

	status, body = r.Post(t, wire.LocalNotePath, wire.LocalNoteRequest{Conversation: open.Conversation, Text: "Build started"})
	durabletest.Want(t, status, body, 200, "")
	cv = durabletest.FindConv(r.Snapshot(t), open.Conversation)
	if n := len(cv.Items); n != 1 || cv.Items[0].Role != "agent" || cv.Items[0].Text != "Build started" {
		t.Fatalf("the note: %+v", cv.Items)
	}

	req := durabletest.YesNo("l-ask", "Deploy from the session?")
	req.Conversation = open.Conversation
	ch := r.AsyncAsk(t, req)
	q := r.WaitQuestion(t, "Deploy from the session?")
	if q.Conversation != open.Conversation {
		t.Fatalf("the question went to %q, want the session's %q", q.Conversation, open.Conversation)
	}

	// The agent's own conversation is not a local program's to close.
	status, body = r.Post(t, wire.LocalClosePath, wire.LocalCloseRequest{Conversation: "main"})
	durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	if durabletest.FindConv(r.Snapshot(t), "main").Closed {
		t.Fatal("a local program closed the agent's own conversation")
	}

	status, body = r.Post(t, wire.LocalClosePath, wire.LocalCloseRequest(open))
	durabletest.Want(t, status, body, 200, "")
	if rep := <-ch; rep.Status != wire.StatusWithdrawn {
		t.Fatalf("closing the session's conversation left its question %+v, want withdrawn", rep)
	}
	if cv := durabletest.FindConv(r.Snapshot(t), open.Conversation); !cv.Closed || len(cv.Questions) != 0 {
		t.Fatalf("after close: %+v", cv)
	}
	// Closed: asking or noting there is refused, as on a device.
	status, body = r.Post(t, wire.LocalNotePath, wire.LocalNoteRequest{Conversation: open.Conversation, Text: "late"})
	durabletest.Want(t, status, body, http.StatusConflict, wire.CodeClosed)
	req.RequestID = "l-ask-2"
	status, body = r.Post(t, wire.AskPath, req)
	durabletest.Want(t, status, body, http.StatusConflict, wire.CodeClosed)

	for _, c := range []struct{ name, path, body string }{
		{"open_empty_title", wire.LocalOpenPath, `{"title":""}`},
		{"open_control_title", wire.LocalOpenPath, `{"title":"a\u0007b"}`},
		{"note_unknown_field", wire.LocalNotePath, `{"conversation":"main","text":"x","role":"user"}`},
		{"note_empty", wire.LocalNotePath, `{"conversation":"main","text":""}`},
		{"close_bad_id", wire.LocalClosePath, `{"conversation":"a/b"}`},
		{"withdraw_no_id", wire.WithdrawPath, `{}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := r.Do(t, "POST", c.path, c.body)
			durabletest.Want(t, status, body, http.StatusBadRequest, wire.CodeBadRequest)
		})
	}
}

// TestWithdraw_D1: an asker that stops waiting (an MCP client cancelled
// the call) withdraws its question at once. Closing the ask request alone
// does not: the question stays on the device until the janitor's two
// minutes, so the withdraw route is what a program that gives up calls.
func TestWithdraw_D1(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	req := durabletest.YesNo("w-1", "Long job?")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.board.Ask(ctx, &req, time.Minute)
	}()
	q := r.WaitQuestion(t, "Long job?")
	cancel()
	<-done
	if cv := durabletest.FindConv(r.Snapshot(t), "main"); len(cv.Questions) != 1 {
		t.Fatalf("an ask request that ended took its question with it: %+v", cv.Questions)
	}

	status, body := r.Post(t, wire.WithdrawPath, wire.WithdrawRequest{RequestID: "w-1"})
	durabletest.Want(t, status, body, 200, "")
	var rep wire.AskReply
	decode(t, body, &rep)
	if rep.Status != wire.StatusWithdrawn || rep.Question != q.Question {
		t.Fatalf("withdraw replied %+v", rep)
	}
	if cv := durabletest.FindConv(r.Snapshot(t), "main"); len(cv.Questions) != 0 {
		t.Fatalf("the withdrawn question is still on the board: %+v", cv.Questions)
	}
	// A device's tap comes too late; a second withdraw tells the decision.
	status, body = r.Post(t, wire.AnswerPath, durabletest.Answer(q, 1, "yes"))
	durabletest.Want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
	status, body = r.Post(t, wire.WithdrawPath, wire.WithdrawRequest{RequestID: "w-1"})
	durabletest.Want(t, status, body, 200, "")

	// An answer that came first stands: withdraw reports it, changes nothing.
	ch := r.AsyncAsk(t, durabletest.YesNo("w-2", "Answered first?"))
	q = r.WaitQuestion(t, "Answered first?")
	status, body = r.Post(t, wire.AnswerPath, durabletest.Answer(q, 1, "yes"))
	durabletest.Want(t, status, body, 200, "")
	<-ch
	status, body = r.Post(t, wire.WithdrawPath, wire.WithdrawRequest{RequestID: "w-2"})
	durabletest.Want(t, status, body, 200, "")
	decode(t, body, &rep)
	if rep.Status != wire.StatusAnswered || rep.OptionIDs[0] != "yes" {
		t.Fatalf("withdraw after the answer replied %+v, want the answer", rep)
	}

	status, body = r.Post(t, wire.WithdrawPath, wire.WithdrawRequest{RequestID: "never-asked"})
	durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownQuestion)
}

// TestLocalRoutesNotOnTokenTransport_K3: like ask, the local routes are
// never served over HTTPS with a token.
func TestLocalRoutesNotOnTokenTransport_K3(t *testing.T) {
	r := newRig(t, durable.Transport{Remote: true, Tokens: durable.Tokens{Current: "t0ken-abcdefghijklmnopqrstuvwxyz012345"}}, Options{})
	r.Token = "t0ken-abcdefghijklmnopqrstuvwxyz012345"
	for _, p := range []string{wire.LocalOpenPath, wire.LocalNotePath, wire.LocalClosePath, wire.WithdrawPath} {
		status, body := r.Do(t, "POST", p, `{}`)
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeNotFound)
	}
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
}
