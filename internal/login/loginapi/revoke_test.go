package loginapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// waitingBoards is a board whose ask waits for a tap, as a hosted board
// waits for the human: it says when the ask waits, and answers yes at the
// tap. heedless boards do not stop at their request's end (a reply that
// races the revocation), others stop as a durable agent does, with an
// error.
type waitingBoards struct {
	heedless bool
	waiting  chan struct{}
	tap      chan struct{}
}

func (b *waitingBoards) Board(_ context.Context, id loginservice.Identity) (string, http.Handler, error) {
	return "raft." + id.Agent, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.waiting <- struct{}{}
		done := r.Context().Done()
		if b.heedless {
			done = nil
		}
		select {
		case <-b.tap:
			json.NewEncoder(w).Encode(wire.AskReply{Question: "q1", Conversation: "asks", Status: wire.StatusAnswered, OptionIDs: []string{wire.Yes}})
		case <-done:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write(wire.ErrorJSON(wire.CodeAgentError, "the ask ended"))
		}
	}), nil
}

// TestRevocationCutsWaitingAsk_R8: an ask already waiting for the human
// (waitSeconds 40) ends the moment its session is revoked, by every way
// there is to revoke one, with 401 invalid; the human's tap after that
// never reaches the revoked session, also when the board answers anyway.
// Every route of an agent session that reaches its board is held to it
// the same way (a read of its questions that waited would be cut alike).
// A request made after the revocation is refused too (questions, ask).
func TestRevocationCutsWaitingAsk_R8(t *testing.T) {
	var onBoard []loginwire.Route
	for _, rt := range loginwire.Routes() {
		if rt.Auth == loginwire.AuthAccess && rt.Path != loginwire.WhoamiPath {
			onBoard = append(onBoard, rt)
		}
	}
	if len(onBoard) != 2 {
		t.Fatalf("the routes to a board are %v; hold each new one to revocation here", onBoard)
	}
	for _, route := range onBoard {
		for _, heedless := range []bool{false, true} {
			for _, tc := range []struct {
				name   string
				revoke func(r *rig, sess map[string]any)
			}{
				{"collie agents revoke", func(r *rig, _ map[string]any) {
					if _, err := r.store.RevokeAgent("agent-7"); err != nil {
						t.Fatal(err)
					}
				}},
				{"logout", func(r *rig, sess map[string]any) {
					status, _, out := r.do("POST", loginwire.RevokePath, `{"schema":"raft-cli-agent-revoke.v1","refresh_token":"`+sess["refresh_token"].(string)+`"}`, nil)
					if status != http.StatusNoContent {
						t.Fatalf("revoke: %d %s", status, out)
					}
				}},
				{"a newer login", func(r *rig, _ map[string]any) { r.login(strings.Repeat("w", 43)) }},
			} {
				name := route.Path + ", " + tc.name
				if heedless {
					name += ", board answers anyway"
				}
				t.Run(name, func(t *testing.T) {
					r := newRig(t)
					wb := &waitingBoards{heedless: heedless, waiting: make(chan struct{}, 1), tap: make(chan struct{}, 1)}
					r.api.o.Boards = wb
					_, sess := r.login(verifier)
					bearer := map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)}
					type reply struct {
						status int
						hdr    http.Header
						body   string
					}
					done := make(chan reply, 1)
					go func() {
						body := ""
						if route.Method == "POST" {
							body = `{"title":"Deploy?","kind":"yes-no","waitSeconds":40}`
						}
						status, hdr, body := r.do(route.Method, route.Path, body, bearer)
						done <- reply{status, hdr, body}
					}()
					<-wb.waiting
					tc.revoke(r, sess)
					wb.tap <- struct{}{} // the human taps after the revocation
					var got reply
					select {
					case got = <-done:
					case <-time.After(20 * time.Second):
						t.Fatal("the waiting ask did not end at the revocation")
					}
					if got.status != http.StatusUnauthorized || refusalCode(t, got.body) != loginwire.CodeInvalid ||
						!strings.Contains(got.hdr.Get("WWW-Authenticate"), "invalid_token") || strings.Contains(got.body, wire.Yes) {
						t.Fatalf("the revoked session's waiting ask: %d %s", got.status, got.body)
					}
					for _, route := range []struct{ method, path, body string }{{"GET", loginwire.QuestionsPath, ""}, {"POST", loginwire.AskPath, `{"title":"Again?"}`}} {
						status, _, out := r.do(route.method, route.path, route.body, bearer)
						if status != http.StatusUnauthorized || refusalCode(t, out) != loginwire.CodeInvalid {
							t.Fatalf("%s after the revocation: %d %s", route.path, status, out)
						}
					}
				})
			}
		}
	}
}

// TestAnswerBeforeRevocationDelivered_R8: an answer the board gave
// before any revocation reaches the agent; watching the session does not
// change an ordinary ask.
func TestAnswerBeforeRevocationDelivered_R8(t *testing.T) {
	r := newRig(t)
	wb := &waitingBoards{waiting: make(chan struct{}, 1), tap: make(chan struct{}, 1)}
	r.api.o.Boards = wb
	_, sess := r.login(verifier)
	wb.tap <- struct{}{}
	status, _, out := r.do("POST", loginwire.AskPath, `{"title":"Deploy?","kind":"yes-no"}`, map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)})
	<-wb.waiting
	var rep wire.AskReply
	if err := json.Unmarshal([]byte(out), &rep); status != http.StatusOK || err != nil || rep.Status != wire.StatusAnswered {
		t.Fatalf("ask: %d %s", status, out)
	}
}

// TestLoginOffSaysWhyAndLogsIt_R11: with agent login off, the action's
// refusal says why in the surface's shape, and the bridge's log says the
// same, so its user sees what the agent was told.
func TestLoginOffSaysWhyAndLogsIt_R11(t *testing.T) {
	r := newRig(t)
	var logs strings.Builder
	var mu sync.Mutex
	off := New(Options{Store: r.store, PlatformOff: "its user has not set platform_key_file in [agents] of config.toml",
		Boards: r.boards, Base: func() string { return "https://b" },
		Log: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), nil))})
	ch := loginwire.Challenge(verifier)
	req := httptest.NewRequest("POST", loginwire.LoginActionPath, strings.NewReader(`{"schema":"raft-cli-agent-login-request.v1","code_challenge":"`+ch+`","code_challenge_method":"S256"}`))
	w := httptest.NewRecorder()
	off.ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || refusalCode(t, w.Body.String()) != loginwire.CodeTemporarilyUnavailable {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "agent login is off on this bridge: its user has not set platform_key_file") {
		t.Fatalf("the bridge's log does not say why:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestRevokedAskOnRealBoard_R8: the case as a user meets it, on a real
// board: an agent asks with waitSeconds 40, the human runs collie agents
// revoke, then taps Yes on the phone; the revoked session's waiting ask
// answers 401 and never the tap.
func TestRevokedAskOnRealBoard_R8(t *testing.T) {
	r := newRig(t)
	shown := make(chan upstream.Waiter, 1)
	host := loginhost.New(loginhost.Options{Attach: func(name string, c upstream.Waiter) error {
		shown <- c
		return nil
	}, Live: r.store.WatchAgent})
	defer host.Close()
	r.api.o.Boards = host
	_, sess := r.login(verifier)
	bearer := map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)}
	type reply struct {
		status int
		body   string
	}
	done := make(chan reply, 1)
	go func() {
		status, _, body := r.do("POST", loginwire.AskPath, `{"requestId":"r1","title":"Deploy?","kind":"yes-no","waitSeconds":40}`, bearer)
		done <- reply{status, body}
	}()
	// The question shows on the board, as a device sees it.
	board := <-shown
	var q wire.Question
	var conv, etag string
	for q.ID == "" {
		rd, err := board.SnapshotWait(context.Background(), etag, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if rd.Snapshot != nil {
			for _, sp := range rd.Snapshot.Spaces {
				for _, tab := range sp.Tabs {
					for _, cv := range tab.Conversations {
						for _, qq := range cv.Questions {
							q, conv = qq, cv.ID
						}
					}
				}
			}
		}
		etag = rd.ETag
	}
	if _, err := r.store.RevokeAgent("agent-7"); err != nil {
		t.Fatal(err)
	}
	// The tap after the revocation: the board may still take it, the
	// revoked session never sees it.
	board.Write(context.Background(), wire.AnswerPath, &wire.AnswerRequest{Header: wire.Header{RequestID: "tap"}, Conversation: conv, Question: q.ID, Revision: q.Revision, OptionIDs: []string{wire.Yes}})
	got := <-done
	if got.status != http.StatusUnauthorized || refusalCode(t, got.body) != loginwire.CodeInvalid {
		t.Fatalf("the revoked session's waiting ask: %d %s", got.status, got.body)
	}
}
