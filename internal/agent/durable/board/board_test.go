package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/agent/durable/grants"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// rig is a board served on a private socket, with belt and starter hooks
// that record what they ran.
type rig struct {
	*durabletest.Client
	srv   *durable.Server
	board *Board

	mu      sync.Mutex
	actions []string
	aborted []string
}

// newRig serves a board on a private socket with transport tr.
func newRig(t *testing.T, tr durable.Transport, o Options) *rig {
	t.Helper()
	s, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{srv: s}
	if o.Space.ID == "" {
		o.Space = wire.Space{ID: "main", Title: "Agent"}
		o.Tab = wire.Space{ID: "main", Title: "Main"}
		o.Main.ID, o.Main.Title = "main", "Questions"
	}
	if o.Hooks.Action == nil {
		o.Hooks.Action = func(id, conv string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if id == "busy" {
				return durable.Refuse(http.StatusConflict, wire.CodeBusy, "the button %q is already running", id)
			}
			r.actions = append(r.actions, id+"@"+conv)
			return nil
		}
		o.Hooks.Starter = func(id string) (string, error) {
			cv := r.board.NewConversationID(id)
			return cv, r.board.AddConversation(cv, "Run of "+id)
		}
		o.Hooks.Abort = func(conv string) bool {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.aborted = append(r.aborted, conv)
			return conv == "running"
		}
	}
	o.Log = durabletest.Quiet()
	b, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	r.board = b
	b.SetBelt([]wire.Button{{ID: "deploy", Label: "Deploy"}, {ID: "busy", Label: "Busy"}})
	b.SetStarters([]wire.Starter{{ID: "tests", Label: "Run the tests"}})
	t.Cleanup(b.Stop)
	r.Client = durabletest.Serve(t, s, tr)
	return r
}

// ask asks, waits 10 ms, and returns the reply (AsyncAsk goes through the
// HTTP route).
func (r *rig) ask(t *testing.T, req wire.AskRequest) wire.AskReply {
	t.Helper()
	if err := req.Validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := r.board.Ask(context.Background(), &req, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestAnswer(t *testing.T) {
	chk := &durabletest.AllowAll{}
	r := newRig(t, durable.Transport{Check: chk}, Options{})
	t.Run("D1_yes_no_answered", func(t *testing.T) {
		ch := r.AsyncAsk(t, durabletest.YesNo("yn", "Deploy main?"))
		q := r.WaitQuestion(t, "Deploy main?")
		a := durabletest.Answer(q, 1, "yes")
		a.Reason = "CI is green"
		status, body := r.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, 200, "")
		rep := <-ch
		if rep.Status != wire.StatusAnswered || rep.OptionIDs[0] != "yes" || rep.Reason != "CI is green" {
			t.Fatalf("asker got %+v", rep)
		}
		if chk.Calls == 0 {
			t.Fatal("the caller check was not consulted")
		}
		c := durabletest.FindConv(r.Snapshot(t), "main")
		if len(c.Questions) != 0 || !strings.Contains(c.Items[len(c.Items)-1].Text, "Yes — Deploy main?") {
			t.Fatalf("after the answer: %+v", c)
		}
		t.Run("already_decided", func(t *testing.T) {
			b := durabletest.Answer(q, 1, "no")
			status, body := r.Post(t, wire.AnswerPath, b)
			durabletest.Want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
		})
		t.Run("same_request_id_replayed", func(t *testing.T) {
			status, body := r.Post(t, wire.AnswerPath, a)
			durabletest.Want(t, status, body, 200, "")
			if !strings.Contains(body, `"replayed":true`) {
				t.Fatalf("a repeated request id was not marked replayed: %s", body)
			}
		})
		t.Run("request_id_reused_for_another_request", func(t *testing.T) {
			b := a
			b.OptionIDs = []string{"no"}
			status, body := r.Post(t, wire.AnswerPath, b)
			durabletest.Want(t, status, body, http.StatusConflict, wire.CodeRequestIDReused)
		})
	})
	t.Run("stale_revision", func(t *testing.T) {
		q := r.ask(t, wire.AskRequest{RequestID: "s1", Kind: wire.AskYesNo, Title: "Delete the branch?", ToolCall: "tc-stale"})
		// D9: the same tool call asked again with new wording raises the revision.
		again := r.ask(t, wire.AskRequest{RequestID: "s2", Kind: wire.AskYesNo, Title: "Delete the branch and its tags?", ToolCall: "tc-stale"})
		if !again.Existing || again.Question != q.Question {
			t.Fatalf("D9: the repeated key asked twice: %+v", again)
		}
		status, body := r.Post(t, wire.AnswerPath, durabletest.Answer(q, 1, "yes"))
		durabletest.Want(t, status, body, http.StatusConflict, wire.CodeStaleRevision)
		status, body = r.Post(t, wire.AnswerPath, durabletest.Answer(q, 2, "no"))
		durabletest.Want(t, status, body, 200, "")
	})
	t.Run("unknown_question", func(t *testing.T) {
		status, body := r.Post(t, wire.AnswerPath, wire.AnswerRequest{Header: wire.Header{RequestID: "u1"}, Conversation: "main", Question: "q999", Revision: 1, OptionIDs: []string{"yes"}})
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownQuestion)
	})
	t.Run("unknown_conversation", func(t *testing.T) {
		status, body := r.Post(t, wire.AnswerPath, wire.AnswerRequest{Header: wire.Header{RequestID: "u2"}, Conversation: "nope", Question: "q1", Revision: 1, OptionIDs: []string{"yes"}})
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
	t.Run("D1_choice", func(t *testing.T) {
		ch := r.AsyncAsk(t, wire.AskRequest{RequestID: "c1", Kind: wire.AskChoice, Title: "Which?", Options: []wire.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}})
		q := r.WaitQuestion(t, "Which?")
		status, body := r.Post(t, wire.AnswerPath, durabletest.Answer(q, 1, "c"))
		durabletest.Want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
		status, body = r.Post(t, wire.AnswerPath, durabletest.Answer(q, 1, "b"))
		durabletest.Want(t, status, body, 200, "")
		if rep := <-ch; rep.OptionIDs[0] != "b" {
			t.Fatalf("asker got %+v", rep)
		}
	})
	t.Run("D1_line", func(t *testing.T) {
		ch := r.AsyncAsk(t, wire.AskRequest{RequestID: "l1", Kind: wire.AskLine, Title: "Branch name?"})
		q := r.WaitQuestion(t, "Branch name?")
		a := wire.AnswerRequest{Header: wire.Header{RequestID: "l-long"}, Conversation: "main", Question: q.Question, Revision: 1, Text: strings.Repeat("x", 32769)}
		status, body := r.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, http.StatusBadRequest, wire.CodeBadRequest)
		if !strings.Contains(body, "the limit is 32768") {
			t.Fatalf("X4: %s", body)
		}
		a = wire.AnswerRequest{Header: wire.Header{RequestID: "l-ok"}, Conversation: "main", Question: q.Question, Revision: 1, Text: "fix/login"}
		status, body = r.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, 200, "")
		if rep := <-ch; rep.Text != "fix/login" {
			t.Fatalf("asker got %+v", rep)
		}
		if c := durabletest.FindConv(r.Snapshot(t), "main"); strings.Contains(c.Items[len(c.Items)-1].Text, "fix/login") {
			t.Fatal("the conversation repeats a typed answer")
		}
	})
	t.Run("D1_form", func(t *testing.T) {
		ch := r.AsyncAsk(t, wire.AskRequest{RequestID: "f1", Kind: wire.AskForm, Title: "Release", Fields: []wire.Field{{ID: "version", Label: "Version"}, {ID: "notes", Label: "Notes"}}})
		q := r.WaitQuestion(t, "Release")
		a := wire.AnswerRequest{Header: wire.Header{RequestID: "f-part"}, Conversation: "main", Question: q.Question, Revision: 1, Values: map[string]string{"version": "1.2"}}
		status, body := r.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
		a = wire.AnswerRequest{Header: wire.Header{RequestID: "f-ok"}, Conversation: "main", Question: q.Question, Revision: 1, Values: map[string]string{"version": "1.2", "notes": "fixes"}}
		status, body = r.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, 200, "")
		if rep := <-ch; rep.Values["notes"] != "fixes" {
			t.Fatalf("asker got %+v", rep)
		}
	})
}

func TestConversationWrites(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	t.Run("send_once_per_request_id", func(t *testing.T) {
		s := wire.SendRequest{Header: wire.Header{RequestID: "s-1"}, Conversation: "main", Text: "hello\u202e agent"}
		for range 3 {
			status, body := r.Post(t, wire.SendPath, s)
			durabletest.Want(t, status, body, 200, "")
		}
		c := durabletest.FindConv(r.Snapshot(t), "main")
		n := 0
		for _, it := range c.Items {
			if it.Role == "user" && strings.HasPrefix(it.Text, "hello") {
				n++
				if it.Text != "hello agent" {
					t.Errorf("X2: sent text kept in the agent as %q", it.Text)
				}
			}
		}
		if n != 1 {
			t.Fatalf("a send repeated 3 times with one request id left %d items", n)
		}
	})
	t.Run("rename", func(t *testing.T) {
		for _, rr := range []wire.RenameRequest{
			{Header: wire.Header{RequestID: "rn1"}, Space: "main", Title: "Space 2"},
			{Header: wire.Header{RequestID: "rn2"}, Tab: "main", Title: "Tab 2"},
			{Header: wire.Header{RequestID: "rn3"}, Conversation: "main", Title: "Conv 2"},
		} {
			status, body := r.Post(t, wire.RenamePath, rr)
			durabletest.Want(t, status, body, 200, "")
		}
		s := r.Snapshot(t)
		if s.Spaces[0].Title != "Space 2" || s.Spaces[0].Tabs[0].Title != "Tab 2" || durabletest.FindConv(s, "main").Title != "Conv 2" {
			t.Fatalf("renames not shown: %+v", s.Spaces[0])
		}
		status, body := r.Post(t, wire.RenamePath, wire.RenameRequest{Header: wire.Header{RequestID: "rn4"}, Tab: "other", Title: "x"})
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
	t.Run("close_withdraws_and_reopen", func(t *testing.T) {
		ch := r.AsyncAsk(t, durabletest.YesNo("cl1", "Before close?"))
		r.WaitQuestion(t, "Before close?")
		status, body := r.Post(t, wire.ClosePath, wire.CloseRequest{Header: wire.Header{RequestID: "cl"}, Conversation: "main"})
		durabletest.Want(t, status, body, 200, "")
		if rep := <-ch; rep.Status != wire.StatusWithdrawn {
			t.Fatalf("asker got %+v after close", rep)
		}
		if c := durabletest.FindConv(r.Snapshot(t), "main"); !c.Closed || len(c.Questions) != 0 {
			t.Fatalf("closed conversation: %+v", c)
		}
		status, body = r.Post(t, wire.SendPath, wire.SendRequest{Header: wire.Header{RequestID: "cl-send"}, Conversation: "main", Text: "x"})
		durabletest.Want(t, status, body, http.StatusConflict, wire.CodeClosed)
		status, body = r.Post(t, wire.ReopenPath, wire.ReopenRequest{Header: wire.Header{RequestID: "ro"}, Conversation: "main"})
		durabletest.Want(t, status, body, 200, "")
		if c := durabletest.FindConv(r.Snapshot(t), "main"); c.Closed {
			t.Fatal("reopen did not reopen")
		}
	})
	t.Run("abort", func(t *testing.T) {
		ch := r.AsyncAsk(t, durabletest.YesNo("ab1", "Abort me?"))
		q := r.WaitQuestion(t, "Abort me?")
		status, body := r.Post(t, wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab"}, Conversation: "main", Question: q.Question})
		durabletest.Want(t, status, body, 200, "")
		if rep := <-ch; rep.Status != wire.StatusWithdrawn {
			t.Fatalf("asker got %+v after abort", rep)
		}
		status, body = r.Post(t, wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab2"}, Conversation: "main"})
		durabletest.Want(t, status, body, http.StatusConflict, wire.CodeNothingRunning)
		status, body = r.Post(t, wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab3"}, Conversation: "main", Question: q.Question})
		durabletest.Want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
	})
	t.Run("action_and_starter", func(t *testing.T) {
		status, body := r.Post(t, wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: "ac1"}, Action: "deploy"})
		durabletest.Want(t, status, body, 200, "")
		status, body = r.Post(t, wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: "ac1"}, Action: "deploy"})
		durabletest.Want(t, status, body, 200, "")
		status, body = r.Post(t, wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: "ac2"}, Action: "busy"})
		durabletest.Want(t, status, body, http.StatusConflict, wire.CodeBusy)
		status, body = r.Post(t, wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: "ac3"}, Action: "rm-rf"})
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
		r.mu.Lock()
		got := strings.Join(r.actions, ",")
		r.mu.Unlock()
		if got != "deploy@main" {
			t.Fatalf("actions run: %s (a replayed request id must not run twice)", got)
		}
		status, body = r.Post(t, wire.StarterPath, wire.StarterRequest{Header: wire.Header{RequestID: "st1"}, Starter: "tests"})
		durabletest.Want(t, status, body, 200, "")
		var rep wire.WriteReply
		json.Unmarshal([]byte(body), &rep)
		if c := durabletest.FindConv(r.Snapshot(t), rep.Conversation); c == nil || c.Title != "Run of tests" {
			t.Fatalf("D2: starter reply %s, conversation not shown", body)
		}
		status, body = r.Post(t, wire.StarterPath, wire.StarterRequest{Header: wire.Header{RequestID: "st2"}, Starter: "nope"})
		durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
}

func TestAsk(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	t.Run("D9_tool_call_key_asked_once", func(t *testing.T) {
		first := r.ask(t, wire.AskRequest{RequestID: "k1", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		second := r.ask(t, wire.AskRequest{RequestID: "k2", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		if first.Existing || !second.Existing || second.Question != first.Question {
			t.Fatalf("D9: first %+v second %+v", first, second)
		}
		n := 0
		for _, q := range durabletest.FindConv(r.Snapshot(t), "main").Questions {
			if q.ToolCall == "toolu_01" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("D9: %d cards for one tool call", n)
		}
		status, body := r.Post(t, wire.AnswerPath, durabletest.Answer(first, 1, "no"))
		durabletest.Want(t, status, body, 200, "")
		third := r.ask(t, wire.AskRequest{RequestID: "k3", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		if !third.Existing || third.Status != wire.StatusAnswered || third.OptionIDs[0] != "no" {
			t.Fatalf("D9: a repeated key after the decision got %+v, want the existing decision", third)
		}
	})
	t.Run("same_request_id_attaches", func(t *testing.T) {
		a := r.ask(t, durabletest.YesNo("same", "Once?"))
		b := r.ask(t, durabletest.YesNo("same", "Once?"))
		if a.Question != b.Question || !b.Existing {
			t.Fatalf("%+v %+v", a, b)
		}
	})
}

func TestAlwaysAllow(t *testing.T) {
	dir := t.TempDir()
	store := grants.File(filepath.Join(dir, "state", "grants.json"))
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{AllowAlways: true, AlwaysFor: 2 * time.Hour, Grants: store})
	tool := &wire.ToolRef{Name: "Bash", Command: "git status --short"}
	q := r.ask(t, wire.AskRequest{RequestID: "aa1", Kind: wire.AskYesNo, Title: "git status?", Tool: tool})
	snapQ := durabletest.FindConv(r.Snapshot(t), "main").Questions[0]
	if !snapQ.AllowAlways || snapQ.AlwaysScope == nil || snapQ.AlwaysScope.Text != `Bash commands starting with "git status" (without shell operators), for 2 hours` {
		t.Fatalf("D7: offer = %+v scope %+v", snapQ, snapQ.AlwaysScope)
	}
	t.Run("K3_not_offered_on_the_token_transport", func(t *testing.T) {
		// The same server, read over the token transport.
		const token = "remote-token-0123456789abcdef0123456789"
		remote := durabletest.Serve(t, r.srv, durable.Transport{Remote: true, Tokens: durable.Tokens{Current: token}})
		remote.Token = token
		status, body := remote.Do(t, "GET", wire.SnapshotPath, "")
		durabletest.Want(t, status, body, 200, "")
		if strings.Contains(body, "allowAlways") || strings.Contains(body, "alwaysScope") {
			t.Fatalf("the token transport's snapshot offers always-allow: %s", body)
		}
		a := durabletest.Answer(q, 1, "yes")
		a.Always = true
		if _, err := r.board.Answer(&a, durable.Transport{Remote: true}); err == nil || !strings.Contains(err.Error(), "never taken over the token transport") {
			t.Fatalf("always over the token transport: %v", err)
		}
	})
	a := durabletest.Answer(q, 1, "yes")
	a.Always = true
	status, body := r.Post(t, wire.AnswerPath, a)
	durabletest.Want(t, status, body, 200, "")
	var grants wire.GrantsReply
	_, gb := r.Do(t, "GET", wire.GrantsPath, "")
	json.Unmarshal([]byte(gb), &grants)
	if len(grants.Grants) != 1 || grants.Grants[0].Scope.CommandPrefix != "git status" {
		t.Fatalf("grants: %s", gb)
	}
	fi, err := os.Stat(string(store))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("grants file: %v %v", fi, err)
	}
	t.Run("matching_call_let_through", func(t *testing.T) {
		rep := r.ask(t, wire.AskRequest{RequestID: "aa2", Kind: wire.AskYesNo, Title: "git status again?", Tool: &wire.ToolRef{Name: "Bash", Command: "git status"}})
		if rep.Status != wire.StatusAnswered || rep.Grant != grants.Grants[0].ID {
			t.Fatalf("got %+v", rep)
		}
	})
	for _, cmd := range []string{"git status; rm -rf ~", "git push", "git status $(curl x)", "git statusx"} {
		t.Run("still_asked/"+cmd, func(t *testing.T) {
			rep := r.ask(t, wire.AskRequest{RequestID: "aa-" + fmt.Sprint(len(cmd)), Kind: wire.AskYesNo, Title: "cmd?", Tool: &wire.ToolRef{Name: "Bash", Command: cmd}})
			if rep.Status != wire.StatusPending {
				t.Fatalf("%q was let through: %+v", cmd, rep)
			}
		})
	}
	t.Run("not_offered_where_config_disables", func(t *testing.T) {
		r2 := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
		q := r2.ask(t, wire.AskRequest{RequestID: "x", Kind: wire.AskYesNo, Title: "t", Tool: tool})
		if durabletest.FindConv(r2.Snapshot(t), "main").Questions[0].AllowAlways {
			t.Fatal("D7: offered without the config")
		}
		a := durabletest.Answer(q, 1, "yes")
		a.Always = true
		status, body := r2.Post(t, wire.AnswerPath, a)
		durabletest.Want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
	})
	t.Run("remembered_across_restarts_and_revoked", func(t *testing.T) {
		r3 := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{AllowAlways: true, Grants: store})
		if g := r3.board.Grants().Grants; len(g) != 1 {
			t.Fatalf("grants after restart: %+v", g)
		}
		status, body := r3.Post(t, wire.RevokePath, wire.RevokeRequest{Grant: grants.Grants[0].ID})
		durabletest.Want(t, status, body, 200, "")
		rep := r3.ask(t, wire.AskRequest{RequestID: "after", Kind: wire.AskYesNo, Title: "t", Tool: &wire.ToolRef{Name: "Bash", Command: "git status"}})
		if rep.Status != wire.StatusPending {
			t.Fatalf("a revoked grant still answers: %+v", rep)
		}
		if gs, _ := store.Load(); len(gs) != 0 {
			t.Fatalf("revoked grant still stored: %+v", gs)
		}
	})
}

func TestBoardStaysUnderSnapshotCap(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	big := strings.Repeat("<\"x\\", 4096)
	for i := range 400 {
		cv := fmt.Sprintf("c%d", i)
		if err := r.board.AddConversation(cv, "run"); err != nil {
			t.Fatal(err)
		}
		r.board.AppendItem(cv, wire.Item{Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "make", Output: big, Summary: big}})
		if i%2 == 0 {
			r.Post(t, wire.ClosePath, wire.CloseRequest{Header: wire.Header{RequestID: "close-" + cv}, Conversation: cv})
		}
	}
	status, body := r.Do(t, "GET", wire.SnapshotPath, "")
	if status != 200 || len(body) > wire.SnapshotCap {
		t.Fatalf("X4: snapshot %d, %d bytes", status, len(body))
	}
	s := r.Snapshot(t)
	if n := len(s.Spaces[0].Tabs[0].Conversations); n > MaxConversations {
		t.Fatalf("%d conversations kept", n)
	}
	t.Logf("snapshot after 400 runs: %d bytes, %d conversations", len(body), len(s.Spaces[0].Tabs[0].Conversations))
}

// TestDefaultDenyOnTimeout: a question with a timeout is denied when the
// time runs out, neither sooner nor later (on synctest's clock), and an
// answer that comes after is refused as already decided, saying it timed
// out.
func TestDefaultDenyOnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Space: wire.Space{ID: "main", Title: "Agent"}, Tab: wire.Space{ID: "main", Title: "Main"}, Log: durabletest.Quiet()}
		o.Main.ID, o.Main.Title = "main", "Questions"
		b, err := New(s, o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop()
		req := wire.AskRequest{RequestID: "to1", Kind: wire.AskYesNo, Title: "Quick?", TimeoutSeconds: 1}
		if err := req.Validate(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rep, err := b.Ask(t.Context(), &req, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Status != wire.StatusTimedOut {
			t.Fatalf("got %+v, want timed-out", rep)
		}
		if d := time.Since(start); d != time.Second {
			t.Fatalf("timed out after %v, want 1s", d)
		}
		ans := durabletest.Answer(rep, 1, "yes")
		_, err = b.Answer(&ans, durable.Transport{Check: &durabletest.AllowAll{}})
		var e *durable.Error
		if !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != wire.CodeAlreadyDecided {
			t.Fatalf("an answer after the timeout: %v, want 409 %s", err, wire.CodeAlreadyDecided)
		}
		if !strings.Contains(e.Message, "timed out") {
			t.Fatalf("the refusal does not say it timed out: %s", e.Message)
		}
	})
}
