package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/callercheck"
	"github.com/collie-linux/collie/internal/wire"
)

// allowAll stands in for the caller check where the test itself must be
// the caller: the real check refuses the agent's own process.
type allowAll struct{ calls int }

func (a *allowAll) Check(syscall.Conn) (callercheck.Caller, error) {
	a.calls++
	return callercheck.Caller{PID: 1}, nil
}

type rig struct {
	token string // sent as a bearer token when set (the token transport)
	srv   *Server
	board *Board
	hc    *http.Client
	path  string

	mu      sync.Mutex
	actions []string
	aborted []string
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newRig serves a board on a private socket with transport t.
func newRig(t *testing.T, tr Transport, o BoardOptions) *rig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "desk")
	path := filepath.Join(dir, "a.sock")
	l, _, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(wire.Hello{Agent: "a"}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{srv: s, path: path}
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
				return Refuse(http.StatusConflict, wire.CodeBusy, "the button %q is already running", id)
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
	o.Log = quiet()
	b, err := NewBoard(s, o)
	if err != nil {
		t.Fatal(err)
	}
	r.board = b
	b.SetBelt([]wire.Button{{ID: "deploy", Label: "Deploy"}, {ID: "busy", Label: "Busy"}})
	b.SetStarters([]wire.Starter{{ID: "tests", Label: "Run the tests"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTransport(ctx, l, tr) }()
	t.Cleanup(func() {
		cancel()
		b.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	r.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	return r
}

func (r *rig) do(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://agent"+path, strings.NewReader(body))
	req.Header.Set(wire.VersionHeader, "1")
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (r *rig) post(t *testing.T, path string, v any) (int, string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return r.do(t, "POST", path, string(b))
}

// want checks a reply's status and error code ("" for success).
func want(t *testing.T, status int, body string, wantStatus int, code string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, body)
	}
	if code != "" {
		got, msg, ok := wire.DecodeError([]byte(body))
		if !ok || got != code {
			t.Fatalf("body %s, want error code %q", body, code)
		}
		if !strings.HasSuffix(msg, "") || len(msg) < 10 {
			t.Fatalf("error message %q is not a sentence", msg)
		}
	}
}

func (r *rig) snapshot(t *testing.T) *wire.Snapshot {
	t.Helper()
	status, body := r.do(t, "GET", wire.SnapshotPath, "")
	if status != 200 {
		t.Fatalf("snapshot: %d %s", status, body)
	}
	s, rep, err := wire.ParseSnapshot([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) > 0 {
		t.Fatalf("the board's snapshot lost objects in the bridge's cleaning: %+v", rep.Dropped)
	}
	return s
}

func findConv(s *wire.Snapshot, id string) *wire.Conversation {
	for i := range s.Spaces[0].Tabs[0].Conversations {
		if c := &s.Spaces[0].Tabs[0].Conversations[i]; c.ID == id {
			return c
		}
	}
	return nil
}

// ask asks, waits 10 ms, and returns the reply (asyncAsk goes through the
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

// asyncAsk asks and waits in the background, as collie ask does.
func (r *rig) asyncAsk(t *testing.T, req wire.AskRequest) <-chan wire.AskReply {
	ch := make(chan wire.AskReply, 1)
	go func() {
		for {
			req.WaitSeconds = 2
			b, _ := json.Marshal(req)
			hreq, _ := http.NewRequest("POST", "http://agent"+wire.AskPath, strings.NewReader(string(b)))
			resp, err := r.hc.Do(hreq)
			if err != nil {
				close(ch)
				return
			}
			var rep wire.AskReply
			err = wire.DecodeReply(resp.Body, resp.ContentLength, &rep)
			resp.Body.Close()
			if err != nil || rep.Status != wire.StatusPending {
				ch <- rep
				return
			}
		}
	}()
	return ch
}

func yesNo(id, title string) wire.AskRequest {
	return wire.AskRequest{RequestID: id, Kind: wire.AskYesNo, Title: title}
}

func answer(q wire.AskReply, rev int64, opt string) wire.AnswerRequest {
	return wire.AnswerRequest{RequestID: "ans-" + q.Question + "-" + opt, Conversation: q.Conversation, Question: q.Question, Revision: rev, OptionIDs: []string{opt}}
}

var everyWrite = map[string]any{
	wire.AnswerPath:  wire.AnswerRequest{RequestID: "r1", Conversation: "main", Question: "q1", Revision: 1, OptionIDs: []string{"yes"}},
	wire.SendPath:    wire.SendRequest{RequestID: "r2", Conversation: "main", Text: "hi"},
	wire.AbortPath:   wire.AbortRequest{RequestID: "r3", Conversation: "main"},
	wire.ActionPath:  wire.ActionRequest{RequestID: "r4", Action: "deploy"},
	wire.RenamePath:  wire.RenameRequest{RequestID: "r5", Conversation: "main", Title: "x"},
	wire.ClosePath:   wire.CloseRequest{RequestID: "r6", Conversation: "main"},
	wire.ReopenPath:  wire.ReopenRequest{RequestID: "r7", Conversation: "main"},
	wire.StarterPath: wire.StarterRequest{RequestID: "r8", Starter: "tests"},
}

// TestCallerCheckRefusesEveryWrite: with the real check on (the default
// transport), the agent's own process is refused every write of C2 and
// still reads.
func TestCallerCheckRefusesEveryWrite(t *testing.T) {
	r := newRig(t, Transport{}, BoardOptions{})
	q := r.ask(t, yesNo("a1", "Deploy?"))
	for _, path := range wire.WritePaths {
		t.Run("C2"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			status, body := r.post(t, path, everyWrite[path])
			want(t, status, body, http.StatusForbidden, wire.CodeCallerRefused)
			if !strings.Contains(body, "the agent itself") && !strings.Contains(body, "root cgroup") {
				t.Errorf("refusal does not say why: %s", body)
			}
		})
	}
	t.Run("C2_refused_before_the_body_is_read", func(t *testing.T) {
		status, body := r.do(t, "POST", wire.AnswerPath, "not json")
		want(t, status, body, http.StatusForbidden, wire.CodeCallerRefused)
	})
	t.Run("C2_reads_stay_open", func(t *testing.T) {
		if status, body := r.do(t, "GET", wire.HelloPath, ""); status != 200 {
			t.Fatalf("hello: %d %s", status, body)
		}
		s := r.snapshot(t)
		c := findConv(s, "main")
		if len(c.Questions) != 1 || c.Questions[0].ID != q.Question {
			t.Fatalf("the question was answered or lost by a refused write: %+v", c)
		}
		if len(c.Items) != 0 {
			t.Fatalf("a refused send left an item: %+v", c.Items)
		}
	})
	t.Run("asking_stays_open", func(t *testing.T) {
		if rep := r.ask(t, yesNo("a2", "Another?")); rep.Status != wire.StatusPending {
			t.Fatalf("ask: %+v", rep)
		}
	})
}

func TestUncheckedTransportC3Off(t *testing.T) {
	r := newRig(t, Transport{Unchecked: true}, BoardOptions{})
	status, body := r.post(t, wire.SendPath, everyWrite[wire.SendPath])
	want(t, status, body, 200, "")
}

func TestAnswer(t *testing.T) {
	chk := &allowAll{}
	r := newRig(t, Transport{Check: chk}, BoardOptions{})
	t.Run("D1_yes_no_answered", func(t *testing.T) {
		ch := r.asyncAsk(t, yesNo("yn", "Deploy main?"))
		q := waitQuestion(t, r, "Deploy main?")
		a := answer(q, 1, "yes")
		a.Reason = "CI is green"
		status, body := r.post(t, wire.AnswerPath, a)
		want(t, status, body, 200, "")
		rep := <-ch
		if rep.Status != wire.StatusAnswered || rep.OptionIDs[0] != "yes" || rep.Reason != "CI is green" {
			t.Fatalf("asker got %+v", rep)
		}
		if chk.calls == 0 {
			t.Fatal("the caller check was not consulted")
		}
		c := findConv(r.snapshot(t), "main")
		if len(c.Questions) != 0 || !strings.Contains(c.Items[len(c.Items)-1].Text, "Yes — Deploy main?") {
			t.Fatalf("after the answer: %+v", c)
		}
		t.Run("already_decided", func(t *testing.T) {
			b := answer(q, 1, "no")
			status, body := r.post(t, wire.AnswerPath, b)
			want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
		})
		t.Run("same_request_id_replayed", func(t *testing.T) {
			status, body := r.post(t, wire.AnswerPath, a)
			want(t, status, body, 200, "")
			if !strings.Contains(body, `"replayed":true`) {
				t.Fatalf("a repeated request id was not marked replayed: %s", body)
			}
		})
		t.Run("request_id_reused_for_another_request", func(t *testing.T) {
			b := a
			b.OptionIDs = []string{"no"}
			status, body := r.post(t, wire.AnswerPath, b)
			want(t, status, body, http.StatusConflict, wire.CodeRequestIDReused)
		})
	})
	t.Run("stale_revision", func(t *testing.T) {
		q := r.ask(t, wire.AskRequest{RequestID: "s1", Kind: wire.AskYesNo, Title: "Delete the branch?", ToolCall: "tc-stale"})
		// D9: the same tool call asked again with new wording raises the revision.
		again := r.ask(t, wire.AskRequest{RequestID: "s2", Kind: wire.AskYesNo, Title: "Delete the branch and its tags?", ToolCall: "tc-stale"})
		if !again.Existing || again.Question != q.Question {
			t.Fatalf("D9: the repeated key asked twice: %+v", again)
		}
		status, body := r.post(t, wire.AnswerPath, answer(q, 1, "yes"))
		want(t, status, body, http.StatusConflict, wire.CodeStaleRevision)
		status, body = r.post(t, wire.AnswerPath, answer(q, 2, "no"))
		want(t, status, body, 200, "")
	})
	t.Run("unknown_question", func(t *testing.T) {
		status, body := r.post(t, wire.AnswerPath, wire.AnswerRequest{RequestID: "u1", Conversation: "main", Question: "q999", Revision: 1, OptionIDs: []string{"yes"}})
		want(t, status, body, http.StatusNotFound, wire.CodeUnknownQuestion)
	})
	t.Run("unknown_conversation", func(t *testing.T) {
		status, body := r.post(t, wire.AnswerPath, wire.AnswerRequest{RequestID: "u2", Conversation: "nope", Question: "q1", Revision: 1, OptionIDs: []string{"yes"}})
		want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
	t.Run("D1_choice", func(t *testing.T) {
		ch := r.asyncAsk(t, wire.AskRequest{RequestID: "c1", Kind: wire.AskChoice, Title: "Which?", Options: []wire.Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}})
		q := waitQuestion(t, r, "Which?")
		status, body := r.post(t, wire.AnswerPath, answer(q, 1, "c"))
		want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
		status, body = r.post(t, wire.AnswerPath, answer(q, 1, "b"))
		want(t, status, body, 200, "")
		if rep := <-ch; rep.OptionIDs[0] != "b" {
			t.Fatalf("asker got %+v", rep)
		}
	})
	t.Run("D1_line", func(t *testing.T) {
		ch := r.asyncAsk(t, wire.AskRequest{RequestID: "l1", Kind: wire.AskLine, Title: "Branch name?"})
		q := waitQuestion(t, r, "Branch name?")
		a := wire.AnswerRequest{RequestID: "l-long", Conversation: "main", Question: q.Question, Revision: 1, Text: strings.Repeat("x", 32769)}
		status, body := r.post(t, wire.AnswerPath, a)
		want(t, status, body, http.StatusBadRequest, wire.CodeBadRequest)
		if !strings.Contains(body, "the limit is 32768") {
			t.Fatalf("X4: %s", body)
		}
		a = wire.AnswerRequest{RequestID: "l-ok", Conversation: "main", Question: q.Question, Revision: 1, Text: "fix/login"}
		status, body = r.post(t, wire.AnswerPath, a)
		want(t, status, body, 200, "")
		if rep := <-ch; rep.Text != "fix/login" {
			t.Fatalf("asker got %+v", rep)
		}
		if c := findConv(r.snapshot(t), "main"); strings.Contains(c.Items[len(c.Items)-1].Text, "fix/login") {
			t.Fatal("the conversation repeats a typed answer")
		}
	})
	t.Run("D1_form", func(t *testing.T) {
		ch := r.asyncAsk(t, wire.AskRequest{RequestID: "f1", Kind: wire.AskForm, Title: "Release", Fields: []wire.Field{{ID: "version", Label: "Version"}, {ID: "notes", Label: "Notes"}}})
		q := waitQuestion(t, r, "Release")
		a := wire.AnswerRequest{RequestID: "f-part", Conversation: "main", Question: q.Question, Revision: 1, Values: map[string]string{"version": "1.2"}}
		status, body := r.post(t, wire.AnswerPath, a)
		want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
		a = wire.AnswerRequest{RequestID: "f-ok", Conversation: "main", Question: q.Question, Revision: 1, Values: map[string]string{"version": "1.2", "notes": "fixes"}}
		status, body = r.post(t, wire.AnswerPath, a)
		want(t, status, body, 200, "")
		if rep := <-ch; rep.Values["notes"] != "fixes" {
			t.Fatalf("asker got %+v", rep)
		}
	})
}

// waitQuestion waits until a question with title is open and returns it
// as an ask reply would name it.
func waitQuestion(t *testing.T, r *rig, title string) wire.AskReply {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, c := range r.snapshot(t).Spaces[0].Tabs[0].Conversations {
			for _, q := range c.Questions {
				if q.Title == title {
					return wire.AskReply{Question: q.ID, Conversation: c.ID, Status: wire.StatusPending}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no open question %q", title)
	return wire.AskReply{}
}

func TestBadBodies(t *testing.T) {
	r := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{})
	tests := []struct {
		name, path, body string
		status           int
		code             string
	}{
		{"oversized", wire.SendPath, `{"requestId":"x","conversation":"main","text":"` + strings.Repeat("a", wire.WriteCap) + `"}`, 413, wire.CodeBodyTooLarge},
		{"malformed", wire.SendPath, `{"requestId":`, 400, wire.CodeBadRequest},
		{"unknown_field", wire.SendPath, `{"requestId":"x","conversation":"main","text":"hi","html":"<b>"}`, 400, wire.CodeBadRequest},
		{"trailing_data", wire.SendPath, `{"requestId":"x","conversation":"main","text":"hi"} {}`, 400, wire.CodeBadRequest},
		{"X4_empty_text", wire.SendPath, `{"requestId":"x","conversation":"main","text":""}`, 400, wire.CodeBadRequest},
		{"X5_bad_request_id", wire.SendPath, `{"requestId":"a b","conversation":"main","text":"hi"}`, 400, wire.CodeBadRequest},
		{"answer_two_kinds", wire.AnswerPath, `{"requestId":"x","conversation":"main","question":"q1","revision":1,"optionIds":["yes"],"text":"y"}`, 400, wire.CodeBadRequest},
		{"always_with_no", wire.AnswerPath, `{"requestId":"x","conversation":"main","question":"q1","revision":1,"optionIds":["no"],"always":true}`, 400, wire.CodeBadRequest},
		{"rename_two_targets", wire.RenamePath, `{"requestId":"x","space":"main","tab":"main","title":"T"}`, 400, wire.CodeBadRequest},
		{"rename_control_chars", wire.RenamePath, `{"requestId":"x","space":"main","title":"a\u202eb"}`, 400, wire.CodeBadRequest},
		{"ask_choice_one_option", wire.AskPath, `{"requestId":"x","kind":"choice","title":"T","options":[{"id":"a","label":"A"}]}`, 400, wire.CodeBadRequest},
		{"ask_unknown_kind", wire.AskPath, `{"requestId":"x","kind":"html","title":"T"}`, 400, wire.CodeBadRequest},
		{"unknown_route", "/v1/shell", `{}`, 404, wire.CodeNotFound},
	}
	before := r.snapshot(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := r.do(t, "POST", tt.path, tt.body)
			want(t, status, body, tt.status, tt.code)
		})
	}
	after := r.snapshot(t)
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Fatalf("refused requests changed the state:\n%s\n%s", b1, b2)
	}
	// The agent keeps serving.
	status, body := r.post(t, wire.SendPath, wire.SendRequest{RequestID: "ok", Conversation: "main", Text: "still here"})
	want(t, status, body, 200, "")
}

func TestConversationWrites(t *testing.T) {
	r := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{})
	t.Run("send_once_per_request_id", func(t *testing.T) {
		s := wire.SendRequest{RequestID: "s-1", Conversation: "main", Text: "hello\u202e agent"}
		for range 3 {
			status, body := r.post(t, wire.SendPath, s)
			want(t, status, body, 200, "")
		}
		c := findConv(r.snapshot(t), "main")
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
			{RequestID: "rn1", Space: "main", Title: "Space 2"},
			{RequestID: "rn2", Tab: "main", Title: "Tab 2"},
			{RequestID: "rn3", Conversation: "main", Title: "Conv 2"},
		} {
			status, body := r.post(t, wire.RenamePath, rr)
			want(t, status, body, 200, "")
		}
		s := r.snapshot(t)
		if s.Spaces[0].Title != "Space 2" || s.Spaces[0].Tabs[0].Title != "Tab 2" || findConv(s, "main").Title != "Conv 2" {
			t.Fatalf("renames not shown: %+v", s.Spaces[0])
		}
		status, body := r.post(t, wire.RenamePath, wire.RenameRequest{RequestID: "rn4", Tab: "other", Title: "x"})
		want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
	t.Run("close_withdraws_and_reopen", func(t *testing.T) {
		ch := r.asyncAsk(t, yesNo("cl1", "Before close?"))
		waitQuestion(t, r, "Before close?")
		status, body := r.post(t, wire.ClosePath, wire.CloseRequest{RequestID: "cl", Conversation: "main"})
		want(t, status, body, 200, "")
		if rep := <-ch; rep.Status != wire.StatusWithdrawn {
			t.Fatalf("asker got %+v after close", rep)
		}
		if c := findConv(r.snapshot(t), "main"); !c.Closed || len(c.Questions) != 0 {
			t.Fatalf("closed conversation: %+v", c)
		}
		status, body = r.post(t, wire.SendPath, wire.SendRequest{RequestID: "cl-send", Conversation: "main", Text: "x"})
		want(t, status, body, http.StatusConflict, wire.CodeClosed)
		status, body = r.post(t, wire.ReopenPath, wire.ReopenRequest{RequestID: "ro", Conversation: "main"})
		want(t, status, body, 200, "")
		if c := findConv(r.snapshot(t), "main"); c.Closed {
			t.Fatal("reopen did not reopen")
		}
	})
	t.Run("abort", func(t *testing.T) {
		ch := r.asyncAsk(t, yesNo("ab1", "Abort me?"))
		q := waitQuestion(t, r, "Abort me?")
		status, body := r.post(t, wire.AbortPath, wire.AbortRequest{RequestID: "ab", Conversation: "main", Question: q.Question})
		want(t, status, body, 200, "")
		if rep := <-ch; rep.Status != wire.StatusWithdrawn {
			t.Fatalf("asker got %+v after abort", rep)
		}
		status, body = r.post(t, wire.AbortPath, wire.AbortRequest{RequestID: "ab2", Conversation: "main"})
		want(t, status, body, http.StatusConflict, wire.CodeNothingRunning)
		status, body = r.post(t, wire.AbortPath, wire.AbortRequest{RequestID: "ab3", Conversation: "main", Question: q.Question})
		want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
	})
	t.Run("action_and_starter", func(t *testing.T) {
		status, body := r.post(t, wire.ActionPath, wire.ActionRequest{RequestID: "ac1", Action: "deploy"})
		want(t, status, body, 200, "")
		status, body = r.post(t, wire.ActionPath, wire.ActionRequest{RequestID: "ac1", Action: "deploy"})
		want(t, status, body, 200, "")
		status, body = r.post(t, wire.ActionPath, wire.ActionRequest{RequestID: "ac2", Action: "busy"})
		want(t, status, body, http.StatusConflict, wire.CodeBusy)
		status, body = r.post(t, wire.ActionPath, wire.ActionRequest{RequestID: "ac3", Action: "rm-rf"})
		want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
		r.mu.Lock()
		got := strings.Join(r.actions, ",")
		r.mu.Unlock()
		if got != "deploy@main" {
			t.Fatalf("actions run: %s (a replayed request id must not run twice)", got)
		}
		status, body = r.post(t, wire.StarterPath, wire.StarterRequest{RequestID: "st1", Starter: "tests"})
		want(t, status, body, 200, "")
		var rep wire.WriteReply
		json.Unmarshal([]byte(body), &rep)
		if c := findConv(r.snapshot(t), rep.Conversation); c == nil || c.Title != "Run of tests" {
			t.Fatalf("D2: starter reply %s, conversation not shown", body)
		}
		status, body = r.post(t, wire.StarterPath, wire.StarterRequest{RequestID: "st2", Starter: "nope"})
		want(t, status, body, http.StatusNotFound, wire.CodeUnknownTarget)
	})
}

func TestAsk(t *testing.T) {
	r := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{})
	t.Run("D9_tool_call_key_asked_once", func(t *testing.T) {
		first := r.ask(t, wire.AskRequest{RequestID: "k1", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		second := r.ask(t, wire.AskRequest{RequestID: "k2", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		if first.Existing || !second.Existing || second.Question != first.Question {
			t.Fatalf("D9: first %+v second %+v", first, second)
		}
		n := 0
		for _, q := range findConv(r.snapshot(t), "main").Questions {
			if q.ToolCall == "toolu_01" {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("D9: %d cards for one tool call", n)
		}
		status, body := r.post(t, wire.AnswerPath, answer(first, 1, "no"))
		want(t, status, body, 200, "")
		third := r.ask(t, wire.AskRequest{RequestID: "k3", Kind: wire.AskYesNo, Title: "Run rm?", ToolCall: "toolu_01"})
		if !third.Existing || third.Status != wire.StatusAnswered || third.OptionIDs[0] != "no" {
			t.Fatalf("D9: a repeated key after the decision got %+v, want the existing decision", third)
		}
	})
	t.Run("default_deny_on_timeout", func(t *testing.T) {
		start := time.Now()
		ch := r.asyncAsk(t, wire.AskRequest{RequestID: "to1", Kind: wire.AskYesNo, Title: "Quick?", TimeoutSeconds: 1})
		rep := <-ch
		if rep.Status != wire.StatusTimedOut {
			t.Fatalf("got %+v, want timed-out", rep)
		}
		if d := time.Since(start); d < 900*time.Millisecond || d > 5*time.Second {
			t.Fatalf("timed out after %v, want about 1 s", d)
		}
		status, body := r.post(t, wire.AnswerPath, answer(rep, 1, "yes"))
		want(t, status, body, http.StatusConflict, wire.CodeAlreadyDecided)
		if !strings.Contains(body, "timed out") {
			t.Fatalf("the refusal does not say it timed out: %s", body)
		}
	})
	t.Run("same_request_id_attaches", func(t *testing.T) {
		a := r.ask(t, yesNo("same", "Once?"))
		b := r.ask(t, yesNo("same", "Once?"))
		if a.Question != b.Question || !b.Existing {
			t.Fatalf("%+v %+v", a, b)
		}
	})
}

func TestAlwaysAllow(t *testing.T) {
	dir := t.TempDir()
	store := FileGrants(filepath.Join(dir, "state", "grants.json"))
	r := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{AllowAlways: true, AlwaysFor: 2 * time.Hour, Grants: store})
	tool := &wire.ToolRef{Name: "Bash", Command: "git status --short"}
	q := r.ask(t, wire.AskRequest{RequestID: "aa1", Kind: wire.AskYesNo, Title: "git status?", Tool: tool})
	snapQ := findConv(r.snapshot(t), "main").Questions[0]
	if !snapQ.AllowAlways || snapQ.AlwaysScope == nil || snapQ.AlwaysScope.Text != `Bash commands starting with "git status" (without shell operators), for 2 hours` {
		t.Fatalf("D7: offer = %+v scope %+v", snapQ, snapQ.AlwaysScope)
	}
	t.Run("K3_not_offered_on_the_token_transport", func(t *testing.T) {
		e := r.srv.current(Transport{Remote: true})
		if strings.Contains(string(e.body), "allowAlways") || strings.Contains(string(e.body), "alwaysScope") {
			t.Fatalf("the token transport's snapshot offers always-allow: %s", e.body)
		}
		a := answer(q, 1, "yes")
		a.Always = true
		if _, err := r.board.Answer(&a, Transport{Remote: true}); err == nil || !strings.Contains(err.Error(), "K3") {
			t.Fatalf("always over the token transport: %v", err)
		}
	})
	a := answer(q, 1, "yes")
	a.Always = true
	status, body := r.post(t, wire.AnswerPath, a)
	want(t, status, body, 200, "")
	var grants wire.GrantsReply
	_, gb := r.do(t, "GET", wire.GrantsPath, "")
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
		r2 := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{})
		q := r2.ask(t, wire.AskRequest{RequestID: "x", Kind: wire.AskYesNo, Title: "t", Tool: tool})
		if findConv(r2.snapshot(t), "main").Questions[0].AllowAlways {
			t.Fatal("D7: offered without the config")
		}
		a := answer(q, 1, "yes")
		a.Always = true
		status, body := r2.post(t, wire.AnswerPath, a)
		want(t, status, body, http.StatusUnprocessableEntity, wire.CodeBadAnswer)
	})
	t.Run("remembered_across_restarts_and_revoked", func(t *testing.T) {
		r3 := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{AllowAlways: true, Grants: store})
		if g := r3.board.Grants().Grants; len(g) != 1 {
			t.Fatalf("grants after restart: %+v", g)
		}
		status, body := r3.post(t, wire.RevokePath, wire.RevokeRequest{Grant: grants.Grants[0].ID})
		want(t, status, body, 200, "")
		rep := r3.ask(t, wire.AskRequest{RequestID: "after", Kind: wire.AskYesNo, Title: "t", Tool: &wire.ToolRef{Name: "Bash", Command: "git status"}})
		if rep.Status != wire.StatusPending {
			t.Fatalf("a revoked grant still answers: %+v", rep)
		}
		if gs, _ := store.Load(); len(gs) != 0 {
			t.Fatalf("revoked grant still stored: %+v", gs)
		}
	})
}

func TestRemoteTransportHasNoLocalRoutes(t *testing.T) {
	const token = "remote-token-0123456789abcdef0123456789"
	// K3: a token transport without a token refuses everything.
	bare := newRig(t, Transport{Remote: true}, BoardOptions{})
	status, body := bare.do(t, "GET", wire.SnapshotPath, "")
	want(t, status, body, http.StatusUnauthorized, wire.CodeTokenRefused)

	r := newRig(t, Transport{Remote: true, Tokens: Tokens{Current: token}}, BoardOptions{})
	status, body = r.do(t, "GET", wire.SnapshotPath, "")
	want(t, status, body, http.StatusUnauthorized, wire.CodeTokenRefused)
	r.token = token
	status, body = r.post(t, wire.AskPath, yesNo("x", "t"))
	want(t, status, body, http.StatusNotFound, wire.CodeNotFound)
	// K3: no caller check on the token transport.
	status, body = r.post(t, wire.SendPath, wire.SendRequest{RequestID: "s", Conversation: "main", Text: "hi"})
	want(t, status, body, 200, "")
}

func TestBoardStaysUnderSnapshotCap(t *testing.T) {
	r := newRig(t, Transport{Check: &allowAll{}}, BoardOptions{})
	big := strings.Repeat("<\"x\\", 4096)
	for i := range 400 {
		cv := fmt.Sprintf("c%d", i)
		if err := r.board.AddConversation(cv, "run"); err != nil {
			t.Fatal(err)
		}
		r.board.AppendItem(cv, wire.Item{Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "make", Output: big, Summary: big}})
		if i%2 == 0 {
			r.post(t, wire.ClosePath, wire.CloseRequest{RequestID: "close-" + cv, Conversation: cv})
		}
	}
	status, body := r.do(t, "GET", wire.SnapshotPath, "")
	if status != 200 || len(body) > wire.SnapshotCap {
		t.Fatalf("X4: snapshot %d, %d bytes", status, len(body))
	}
	s := r.snapshot(t)
	if n := len(s.Spaces[0].Tabs[0].Conversations); n > MaxConversations {
		t.Fatalf("%d conversations kept", n)
	}
	t.Logf("snapshot after 400 runs: %d bytes, %d conversations", len(body), len(s.Spaces[0].Tabs[0].Conversations))
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Hour: "1 hour", 90 * time.Minute: "90 minutes", 48 * time.Hour: "2 days", 45 * time.Second: "45 seconds"} {
		if got := humanDuration(d); got != want {
			t.Errorf("humanDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestAskOutlastsServerTimeouts: an ask waits longer than the server's
// read and write timeouts (30 s in use; 300 ms here) and still gets its
// answer on the same request.
func TestAskOutlastsServerTimeouts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desk")
	path := filepath.Join(dir, "a.sock")
	l, _, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewServer(wire.Hello{Agent: "a"}, quiet())
	s.readTimeout, s.writeTimeout = 300*time.Millisecond, 300*time.Millisecond
	b, err := NewBoard(s, BoardOptions{Space: wire.Space{ID: "s", Title: "S"}, Tab: wire.Space{ID: "t", Title: "T"}, Main: struct{ ID, Title string }{"main", "M"}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.ServeTransport(ctx, l, Transport{Unchecked: true})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		q := b.Snapshot().Spaces[0].Tabs[0].Conversations[0].Questions[0]
		b.Answer(&wire.AnswerRequest{RequestID: "late", Conversation: "main", Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}}, Transport{})
	}()
	body, _ := json.Marshal(wire.AskRequest{RequestID: "slow", Kind: wire.AskYesNo, Title: "Slow human?", WaitSeconds: 5})
	start := time.Now()
	resp, err := hc.Post("http://agent"+wire.AskPath, "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the ask was cut off after %v: %v", time.Since(start), err)
	}
	defer resp.Body.Close()
	var rep wire.AskReply
	if err := wire.DecodeReply(resp.Body, resp.ContentLength, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != wire.StatusAnswered {
		t.Fatalf("after %v: %+v, want the answer given at 1.5 s", time.Since(start), rep)
	}
}
