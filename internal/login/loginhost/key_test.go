package loginhost

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// collidingIDs searches two agent ids, of one server, alike in their
// first 40 characters, whose usual labels (Name) collide: 24 bits of
// digest collide within a few thousand ids.
func collidingIDs(t *testing.T) (loginservice.Identity, loginservice.Identity) {
	t.Helper()
	prefix := "agent-" + strings.Repeat("a", 34)
	seen := map[string]loginservice.Identity{}
	for i := range 1 << 20 {
		id := loginservice.Identity{Agent: prefix + strconv.Itoa(i), Server: "srv-1", App: "app-1"}
		n := Name(id)
		if o, ok := seen[n]; ok {
			return o, id
		}
		seen[n] = id
	}
	t.Fatal("no colliding labels found")
	return loginservice.Identity{}, loginservice.Identity{}
}

// shows records what the host attached and detached, as the bridge
// would show and hide them.
type shows struct {
	mu       sync.Mutex
	attached map[string]upstream.Waiter
	detached chan string
}

func newShows() *shows {
	return &shows{attached: map[string]upstream.Waiter{}, detached: make(chan string, 16)}
}

func (s *shows) attach(name string, c upstream.Waiter) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attached[name] = c
	return nil
}

func (s *shows) detach(name string) {
	s.mu.Lock()
	delete(s.attached, name)
	s.mu.Unlock()
	s.detached <- name
}

// TestCollidingLabelsTwoBoards_R5: two agents whose usual labels collide
// (the first 40 characters of the id alike, 24 bits of digest alike) get
// two boards under two labels, each with its own questions: boards are
// keyed by the whole identity, a label is only a name to show.
func TestCollidingLabelsTwoBoards_R5(t *testing.T) {
	a, b := collidingIDs(t)
	if Name(a) != Name(b) {
		t.Fatal("the search found no collision")
	}
	s := newShows()
	h := New(Options{Attach: s.attach, Detach: s.detach})
	defer h.Close()
	la, _, err := h.Board(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	lb, _, err := h.Board(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if la == lb || !wire.ValidName(la) || !wire.ValidName(lb) || len(s.attached) != 2 {
		t.Fatalf("labels %q and %q (%d attached)", la, lb, len(s.attached))
	}
	if h.Label(a) != la || h.Label(b) != lb {
		t.Fatalf("Label = %q, %q; want %q, %q", h.Label(a), h.Label(b), la, lb)
	}
	// Each board is its own agent's: its space is titled with the id.
	for _, c := range []struct {
		id    loginservice.Identity
		label string
	}{{a, la}, {b, lb}} {
		rd, err := s.attached[c.label].SnapshotWait(context.Background(), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(rd.Snapshot.Spaces) != 1 || rd.Snapshot.Spaces[0].Title != c.id.Agent {
			t.Fatalf("board %s shows %+v, want agent %s", c.label, rd.Snapshot.Spaces, c.id.Agent)
		}
	}
	// Asking again finds each agent's own board.
	if l, h2, _ := h.Board(context.Background(), b); l != lb || h2 == nil {
		t.Fatalf("b's board again: %s", l)
	}
	// Labels stay valid names at the edges: a 128-character id.
	long := loginservice.Identity{Agent: strings.Repeat("Z", 128), Server: strings.Repeat("s", 128)}
	for _, l := range []string{label(long.Key(), 8, 0), label(long.Key(), 3, 1<<31)} {
		if !wire.ValidName(l) {
			t.Fatalf("label %q is not a valid name", l)
		}
	}
	// A third agent whose usual and longer labels are both taken gets a
	// counter.
	k := loginservice.AgentKey{Server: "x", Agent: "y"}
	h.mu.Lock()
	h.labels[label(k, 3, 0)] = loginservice.AgentKey{Agent: "other"}
	h.labels[label(k, 8, 0)] = loginservice.AgentKey{Agent: "another"}
	got := h.freeLabel(k)
	h.mu.Unlock()
	if got != label(k, 3, 2) || !wire.ValidName(got) {
		t.Fatalf("freeLabel = %q", got)
	}
}

// login makes a live session for id in store.
func login(t *testing.T, store *loginservice.Store, id loginservice.Identity) {
	t.Helper()
	v := strings.Repeat("v", 43)
	g, _, err := store.Grant(id, loginwire.Challenge(v))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Exchange(g, v); err != nil {
		t.Fatal(err)
	}
}

// TestBoardReleasedWithItsSessions_R5: an agent's board is released (its
// work stopped, no longer shown) the moment the agent has no live session
// left, so a bridge's boards are those of agents that can still ask; the
// agent's next login and ask make a new board.
func TestBoardReleasedWithItsSessions_R5(t *testing.T) {
	store, err := loginservice.Open(loginservice.Options{Path: filepath.Join(t.TempDir(), "agent-sessions.json"), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s := newShows()
	h := New(Options{Attach: s.attach, Detach: s.detach, Live: store.WatchAgent})
	defer h.Close()
	id := loginservice.Identity{Agent: "agent-7", Server: "srv-1", App: "app-1"}
	other := loginservice.Identity{Agent: "agent-8", Server: "srv-1", App: "app-1"}
	login(t, store, id)
	login(t, store, other)
	name, _, err := h.Board(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	otherName, _, _ := h.Board(context.Background(), other)
	login(t, store, id) // a new login replaces the session: the agent is still live
	if _, err := store.RevokeAgent(id.Agent); err != nil {
		t.Fatal(err)
	}
	if got := <-s.detached; got != name {
		t.Fatalf("detached %q, want %q", got, name)
	}
	h.mu.Lock()
	n := len(h.boards)
	h.mu.Unlock()
	if n != 1 || s.attached[otherName] == nil {
		t.Fatalf("%d boards kept, want the other agent's only", n)
	}
	login(t, store, id)
	again, ask, err := h.Board(context.Background(), id)
	if err != nil || again != name || ask == nil || s.attached[name] == nil {
		t.Fatalf("the board after a new login: %q %v", again, err)
	}
	r := httptest.NewRequest("GET", wire.SnapshotPath, nil)
	r.Header.Set(wire.VersionHeader, "1")
	w := httptest.NewRecorder()
	ask.ServeHTTP(w, r)
	if w.Code != 200 {
		t.Fatalf("the new board's snapshot: %d %s", w.Code, w.Body)
	}
}
