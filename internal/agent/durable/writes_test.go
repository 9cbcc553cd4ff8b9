package durable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

// rig is a server with a board as its App, served on a private socket.
type rig struct {
	*durabletest.Client
	board *board.Board
}

// newRig serves a board on a private socket with transport tr.
func newRig(t *testing.T, tr durable.Transport, o board.Options) *rig {
	t.Helper()
	s, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	if o.Space.ID == "" {
		o.Space = wire.Space{ID: "main", Title: "Agent"}
		o.Tab = wire.Space{ID: "main", Title: "Main"}
		o.Main.ID, o.Main.Title = "main", "Questions"
	}
	o.Log = durabletest.Quiet()
	b, err := board.New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	b.SetBelt([]wire.Button{{ID: "deploy", Label: "Deploy"}, {ID: "busy", Label: "Busy"}})
	b.SetStarters([]wire.Starter{{ID: "tests", Label: "Run the tests"}})
	t.Cleanup(b.Stop)
	return &rig{Client: durabletest.Serve(t, s, tr), board: b}
}

// ask asks, waits 10 ms, and returns the reply.
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

var everyWrite = map[string]any{
	wire.AnswerPath:  wire.AnswerRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "main", Question: "q1", Revision: 1, OptionIDs: []string{"yes"}},
	wire.SendPath:    wire.SendRequest{Header: wire.Header{RequestID: "r2"}, Conversation: "main", Text: "hi"},
	wire.AbortPath:   wire.AbortRequest{Header: wire.Header{RequestID: "r3"}, Conversation: "main"},
	wire.ActionPath:  wire.ActionRequest{Header: wire.Header{RequestID: "r4"}, Action: "deploy"},
	wire.RenamePath:  wire.RenameRequest{Header: wire.Header{RequestID: "r5"}, Conversation: "main", Title: "x"},
	wire.ClosePath:   wire.CloseRequest{Header: wire.Header{RequestID: "r6"}, Conversation: "main"},
	wire.ReopenPath:  wire.ReopenRequest{Header: wire.Header{RequestID: "r7"}, Conversation: "main"},
	wire.StarterPath: wire.StarterRequest{Header: wire.Header{RequestID: "r8"}, Starter: "tests"},
}

// TestCallerCheckRefusesEveryWrite: with the real check on (the default
// transport), the agent's own process is refused every write of C2 and
// still reads.
func TestCallerCheckRefusesEveryWrite(t *testing.T) {
	r := newRig(t, durable.Transport{}, board.Options{})
	q := r.ask(t, durabletest.YesNo("a1", "Deploy?"))
	for _, w := range wire.Writes() {
		path := w.Path
		t.Run("C2"+strings.ReplaceAll(path, "/", "_"), func(t *testing.T) {
			status, body := r.Post(t, path, everyWrite[path])
			durabletest.Want(t, status, body, http.StatusForbidden, wire.CodeCallerRefused)
			if !strings.Contains(body, "the agent itself") && !strings.Contains(body, "root cgroup") {
				t.Errorf("refusal does not say why: %s", body)
			}
		})
	}
	t.Run("C2_refused_before_the_body_is_read", func(t *testing.T) {
		status, body := r.Do(t, "POST", wire.AnswerPath, "not json")
		durabletest.Want(t, status, body, http.StatusForbidden, wire.CodeCallerRefused)
	})
	t.Run("C2_reads_stay_open", func(t *testing.T) {
		if status, body := r.Do(t, "GET", wire.HelloPath, ""); status != 200 {
			t.Fatalf("hello: %d %s", status, body)
		}
		s := r.Snapshot(t)
		c := durabletest.FindConv(s, "main")
		if len(c.Questions) != 1 || c.Questions[0].ID != q.Question {
			t.Fatalf("the question was answered or lost by a refused write: %+v", c)
		}
		if len(c.Items) != 0 {
			t.Fatalf("a refused send left an item: %+v", c.Items)
		}
	})
	t.Run("asking_stays_open", func(t *testing.T) {
		if rep := r.ask(t, durabletest.YesNo("a2", "Another?")); rep.Status != wire.StatusPending {
			t.Fatalf("ask: %+v", rep)
		}
	})
}

func TestUncheckedTransportC3Off(t *testing.T) {
	r := newRig(t, durable.Transport{Unchecked: true}, board.Options{})
	status, body := r.Post(t, wire.SendPath, everyWrite[wire.SendPath])
	durabletest.Want(t, status, body, 200, "")
}

func TestBadBodies(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, board.Options{})
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
	before := r.Snapshot(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := r.Do(t, "POST", tt.path, tt.body)
			durabletest.Want(t, status, body, tt.status, tt.code)
		})
	}
	after := r.Snapshot(t)
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Fatalf("refused requests changed the state:\n%s\n%s", b1, b2)
	}
	// The agent keeps serving.
	status, body := r.Post(t, wire.SendPath, wire.SendRequest{Header: wire.Header{RequestID: "ok"}, Conversation: "main", Text: "still here"})
	durabletest.Want(t, status, body, 200, "")
}

func TestRemoteTransportHasNoLocalRoutes(t *testing.T) {
	const token = "remote-token-0123456789abcdef0123456789"
	// K3: a token transport without a token refuses everything.
	bare := newRig(t, durable.Transport{Remote: true}, board.Options{})
	status, body := bare.Do(t, "GET", wire.SnapshotPath, "")
	durabletest.Want(t, status, body, http.StatusUnauthorized, wire.CodeTokenRefused)

	r := newRig(t, durable.Transport{Remote: true, Tokens: durable.Tokens{Current: token}}, board.Options{})
	status, body = r.Do(t, "GET", wire.SnapshotPath, "")
	durabletest.Want(t, status, body, http.StatusUnauthorized, wire.CodeTokenRefused)
	r.Token = token
	status, body = r.Post(t, wire.AskPath, durabletest.YesNo("x", "t"))
	durabletest.Want(t, status, body, http.StatusNotFound, wire.CodeNotFound)
	// K3: no caller check on the token transport.
	status, body = r.Post(t, wire.SendPath, wire.SendRequest{Header: wire.Header{RequestID: "s"}, Conversation: "main", Text: "hi"})
	durabletest.Want(t, status, body, 200, "")
}

// TestAskOutlastsServerTimeouts: an ask waits longer than the server's
// read and write timeouts (30 s each) and still gets its answer on the
// same request. It runs on synctest's clock over an in-memory connection,
// so the timeouts are the real ones and the answer comes at exactly 45 s;
// until then the ask is still waiting.
func TestAskOutlastsServerTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := memnet.New()
		s, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
		if err != nil {
			t.Fatal(err)
		}
		b, err := board.New(s, board.Options{Space: wire.Space{ID: "s", Title: "S"}, Tab: wire.Space{ID: "t", Title: "T"}, Main: struct{ ID, Title string }{"main", "M"}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Stop()
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- s.ServeTransport(ctx, l, durable.Transport{Unchecked: true}) }()
		tr := &http.Transport{DialContext: l.DialContext}
		defer func() {
			tr.CloseIdleConnections()
			cancel()
			if err := <-served; err != nil {
				t.Error(err)
			}
		}()

		type result struct {
			rep   wire.AskReply
			err   error
			after time.Duration
		}
		done := make(chan result, 1)
		start := time.Now()
		go func() {
			var res result
			body, _ := json.Marshal(wire.AskRequest{RequestID: "slow", Kind: wire.AskYesNo, Title: "Slow human?", WaitSeconds: wire.MaxAskWait})
			resp, err := (&http.Client{Transport: tr}).Post("http://agent"+wire.AskPath, "application/json", strings.NewReader(string(body)))
			if err == nil {
				err = wire.DecodeReply(resp.Body, resp.ContentLength, &res.rep)
				resp.Body.Close()
			}
			res.err, res.after = err, time.Since(start)
			done <- res
		}()
		synctest.Wait() // the ask is posed and waits for a human
		qs := b.Snapshot().Spaces[0].Tabs[0].Conversations[0].Questions
		if len(qs) != 1 {
			t.Fatalf("the ask posed %d questions, want 1", len(qs))
		}
		const late = 45 * time.Second // past both timeouts, within the ask's wait
		time.Sleep(late)
		synctest.Wait()
		select {
		case res := <-done:
			t.Fatalf("the ask ended after %v, before its answer: %+v, err %v", res.after, res.rep, res.err)
		default:
		}
		b.Answer(&wire.AnswerRequest{Header: wire.Header{RequestID: "late"}, Conversation: "main", Question: qs[0].ID, Revision: qs[0].Revision, OptionIDs: []string{"yes"}}, durable.Transport{})
		res := <-done
		if res.err != nil {
			t.Fatalf("the ask was cut off after %v: %v", res.after, res.err)
		}
		if res.rep.Status != wire.StatusAnswered || res.after != late {
			t.Fatalf("after %v: %+v, want the answer given at %v", res.after, res.rep, late)
		}
	})
}
