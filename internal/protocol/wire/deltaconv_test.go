package wire

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// DiffConversation, the device API's delta between two states of a
// conversation the bridge holds: applied to the older one, it gives the
// newer exactly (differential, over seeded random changes, along snapshot
// deltas and across whole reads), and along appends it costs the change.

// applyConv applies cd to a copy of c, as a page applies it: removals,
// then each element in its place or at the end. It goes through
// State.Apply, the one applier of the protocol's deltas.
func applyConv(t *testing.T, c Conversation, cd *ConversationDelta) Conversation {
	t.Helper()
	if cd == nil {
		return c
	}
	st := NewState(&Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{c}}}}}}, Report{})
	ns, _, err := st.Apply(&Delta{Conversations: []ConversationDelta{*cd}})
	if err != nil {
		t.Fatalf("apply %+v: %v", cd, err)
	}
	return ns.Snap.Spaces[0].Tabs[0].Conversations[0]
}

func conversations(s *Snapshot) []Conversation {
	var out []Conversation
	for _, sp := range s.Spaces {
		for _, tb := range sp.Tabs {
			out = append(out, tb.Conversations...)
		}
	}
	return out
}

func TestDiffConversation_AppliedEqualsWhole(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 11))}
			raw := g.snapshot()
			st := wholeState(t, raw)
			// The states the bridge held, oldest first: a device may read
			// since any of them.
			held := []*State{st}
			for step := range 60 {
				next := cloneSnapshot(raw)
				g.mutate(next)
				want := wholeState(t, next)
				d, ok := Diff(raw, next)
				raw = next
				if ok {
					if got, _, err := st.Apply(roundTrip(t, d)); err == nil {
						want = got // along deltas: lists shared with the base
					}
				}
				st = want
				held = append(held, st)
				for back := 1; back <= 3 && back < len(held); back++ {
					old := conversations(held[len(held)-1-back].Snap)
					cur := conversations(st.Snap)
					for i := range cur {
						cd := DiffConversation(&old[i], &cur[i])
						got := applyConv(t, old[i], cd)
						if !reflect.DeepEqual(normal(got), normal(cur[i])) {
							t.Fatalf("step %d, %d back, conversation %s: the delta %+v gives\n%+v\nwant\n%+v", step, back, cur[i].ID, cd, got, cur[i])
						}
						if cd == nil && !reflect.DeepEqual(normal(old[i]), normal(cur[i])) {
							t.Fatalf("step %d: no delta, yet conversation %s changed", step, cur[i].ID)
						}
					}
				}
			}
		})
	}
}

// normal makes empty lists nil: JSON leaves both out alike.
func normal(c Conversation) Conversation {
	if len(c.Items) == 0 {
		c.Items = nil
	}
	if len(c.Questions) == 0 {
		c.Questions = nil
	}
	return c
}

// TestDiffConversation_AppendsCostTheChange: along a line of appends the
// delta is the new items alone, found without comparing the old ones.
func TestDiffConversation_AppendsCostTheChange(t *testing.T) {
	raw := &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c"}}}}}}}
	for i := range 5000 {
		raw.Spaces[0].Tabs[0].Conversations[0].Items = append(raw.Spaces[0].Tabs[0].Conversations[0].Items,
			Item{ID: fmt.Sprint("i", i), Kind: KindText, Text: "some transcript text"})
	}
	st := wholeState(t, raw)
	for i := range 8 {
		ns, _, err := st.Apply(&Delta{Conversations: []ConversationDelta{{ID: "c", Items: []Item{{ID: fmt.Sprint("n", i), Kind: KindText, Text: "new"}}}}})
		if err != nil {
			t.Fatal(err)
		}
		b, c := &st.Snap.Spaces[0].Tabs[0].Conversations[0], &ns.Snap.Spaces[0].Tabs[0].Conversations[0]
		var cd *ConversationDelta
		allocs := testing.AllocsPerRun(20, func() { cd = DiffConversation(b, c) })
		if cd == nil || len(cd.Items) != 1 || cd.Items[0].ID != fmt.Sprint("n", i) || len(cd.RemoveItems) != 0 {
			t.Fatalf("append %d: delta %+v; want the new item alone", i, cd)
		}
		if allocs > 2 {
			t.Errorf("append %d: %v allocations; want the delta's own alone", i, allocs)
		}
		st = ns
	}
}
