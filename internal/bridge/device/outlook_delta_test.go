package device

import (
	"fmt"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestOutlook_DeltaCostsTheChange: along snapshot deltas, the tracker
// gives the conversation a delta changed a new revision, keeps every other
// conversation's part as it was, and hashes none of them; a whole read
// (another line) is hashed and compared as before.
func TestOutlook_DeltaCostsTheChange(t *testing.T) {
	snap := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "S", Tabs: []wire.Tab{{ID: "t", Title: "T"}}}}}
	for i := range 3 {
		snap.Spaces[0].Tabs[0].Conversations = append(snap.Spaces[0].Tabs[0].Conversations,
			wire.Conversation{ID: fmt.Sprint("c", i), Title: "C", Items: []wire.Item{{ID: "i", Kind: wire.KindText, Text: "x"}}})
	}
	st := wire.NewState(snap, wire.Report{})
	cur := view.Agent{AgentStatus: view.AgentStatus{Name: "a", Reachable: true}, Snapshot: st.Snap, Lineage: st.Lineage}
	tr := newTracker(func() []view.Agent { return []view.Agent{cur} }, "e")
	first := tr.current()

	next, _, err := st.Apply(&wire.Delta{Conversations: []wire.ConversationDelta{{ID: "c1", Items: []wire.Item{{ID: "j", Kind: wire.KindText, Text: "new"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	cur = view.Agent{AgentStatus: cur.AgentStatus, Snapshot: next.Snap, Lineage: next.Lineage}
	second := tr.current()
	a, b := first.byName["a"], second.byName["a"]
	for _, id := range []string{"c0", "c2"} {
		if b.convs[id] != a.convs[id] {
			t.Errorf("%s: a delta that did not touch it changed its part: %+v -> %+v", id, a.convs[id], b.convs[id])
		}
	}
	if c := b.convs["c1"]; c.rev <= a.convs["c1"].rev || c.hashed {
		t.Errorf("c1: %+v; want a new revision, unhashed", c)
	}
	ch := diff(first, second)
	if len(ch) != 1 || len(ch[0].Conversations) != 1 || ch[0].Conversations[0].ID != "c1" || ch[0].Outline != 0 {
		t.Errorf("the feed says %+v; want conversation c1 alone", ch)
	}

	// A whole read of the same content: another line, hashed; c0 and c2
	// keep their revisions, and c1, unhashed before, gets a new one.
	copied := *next.Snap // a new read: a new pointer
	whole := wire.NewState(&copied, wire.Report{})
	cur = view.Agent{AgentStatus: cur.AgentStatus, Snapshot: whole.Snap, Lineage: whole.Lineage}
	third := tr.current().byName["a"]
	if third.convs["c0"].rev != a.convs["c0"].rev || !third.convs["c1"].hashed {
		t.Errorf("after a whole read: %+v", third.convs)
	}
}
