package loginhost

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

func TestName(t *testing.T) {
	tests := []struct {
		id     loginservice.Identity
		prefix string
	}{
		{loginservice.Identity{Agent: "agent-7", Server: "s"}, "raft.agent-7."},
		{loginservice.Identity{Agent: "Agent_7.x", Server: "s"}, "raft.agent_7.x."},
		{loginservice.Identity{Agent: strings.Repeat("A", 128), Server: "s"}, "raft." + strings.Repeat("a", 40) + "."},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		n := Name(tt.id)
		if !strings.HasPrefix(n, tt.prefix) || !wire.ValidName(n) || seen[n] {
			t.Errorf("Name(%+v) = %q (valid: %v)", tt.id, n, wire.ValidName(n))
		}
		seen[n] = true
	}
	// One agent id on two servers, or in two cases: two boards.
	a, b, c := Name(loginservice.Identity{Agent: "x", Server: "1"}), Name(loginservice.Identity{Agent: "x", Server: "2"}), Name(loginservice.Identity{Agent: "X", Server: "1"})
	if a == b || a == c {
		t.Fatalf("names collide: %s %s %s", a, b, c)
	}
}

// TestBoardAskAndAnswer_D6: an agent's ask lands on its own board, which
// the bridge reads through the hosted client (cleaned, X1); a device's
// answer through the client's Write (Bridge.Forward's path) decides it,
// and the waiting ask gets the answer. Another agent gets another board.
func TestBoardAskAndAnswer_D6(t *testing.T) {
	var mu sync.Mutex
	attached := map[string]upstream.Waiter{}
	h := New(Options{Attach: func(name string, c upstream.Waiter) error {
		mu.Lock()
		defer mu.Unlock()
		attached[name] = c
		return nil
	}})
	defer h.Close()
	ctx := context.Background()
	id := loginservice.Identity{Agent: "agent-7\u202e", Server: "srv", App: "app"}
	name, ask, err := h.Board(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	name2, _, err := h.Board(ctx, id)
	if err != nil || name2 != name || len(attached) != 1 {
		t.Fatalf("a second Board for one agent: %s %v, %d attached", name2, err, len(attached))
	}
	replied := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", wire.AskPath, strings.NewReader(`{"requestId":"r1","kind":"yes-no","title":"Deploy 1a2b3c?","waitSeconds":30}`))
		r.Header.Set(wire.VersionHeader, "1")
		ask.ServeHTTP(w, r)
		replied <- w
	}()
	c := attached[name]
	var q wire.Question
	var conv string
	for q.ID == "" {
		rd, err := c.SnapshotWait(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range rd.Snapshot.Spaces {
			if sp.Title != "agent-7" {
				t.Fatalf("X1: the space's title %q is not cleaned", sp.Title)
			}
			for _, tab := range sp.Tabs {
				for _, cv := range tab.Conversations {
					for _, qq := range cv.Questions {
						q, conv = qq, cv.ID
					}
				}
			}
		}
		if q.ID == "" {
			select {
			case w := <-replied:
				t.Fatalf("the ask ended before its question was shown: %d %s", w.Code, w.Body)
			default:
			}
			if _, err := c.SnapshotWait(ctx, rd.ETag, 5e9); err != nil {
				t.Fatal(err)
			}
		}
	}
	if q.Title != "Deploy 1a2b3c?" {
		t.Fatalf("X1: the question's title %q", q.Title)
	}
	if _, err := c.Write(ctx, wire.AnswerPath, &wire.AnswerRequest{Header: wire.Header{RequestID: "tap"}, Conversation: conv, Question: q.ID, Revision: q.Revision, OptionIDs: []string{wire.Yes}}); err != nil {
		t.Fatalf("the device's answer: %v", err)
	}
	w := <-replied
	var rep wire.AskReply
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || w.Code != http.StatusOK || rep.Status != wire.StatusAnswered || rep.OptionIDs[0] != wire.Yes {
		t.Fatalf("the ask's reply: %d %s", w.Code, w.Body)
	}
	other, _, err := h.Board(ctx, loginservice.Identity{Agent: "agent-8", Server: "srv", App: "app"})
	if err != nil || other == name || len(attached) != 2 {
		t.Fatalf("another agent's board: %s %v", other, err)
	}
}
