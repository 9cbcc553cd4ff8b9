package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// FuzzDelta applies any delta to any snapshot and checks it against an
// oracle: the same delta applied to the agent's raw snapshot by the plain
// rules of collie-durable(7), then cleaned whole. A delta either is
// refused (ErrDelta, the state unchanged) or gives exactly the oracle's
// state, within the cap, with its size right. Seeds: testdata/fuzz/FuzzDelta.
func FuzzDelta(f *testing.F) {
	f.Add([]byte(`{"spaces":[{"id":"s","title":"S","tabs":[{"id":"t","title":"T","conversations":[{"id":"c","title":"C","items":[{"id":"i1","kind":"text","text":"hi"}]}]}]}]}`),
		[]byte(`{"conversations":[{"id":"c","items":[{"id":"i2","kind":"text","text":"more"}]}]}`))
	f.Add([]byte(`{"spaces":[{"id":"s","title":"S","tabs":[{"id":"t","title":"T","conversations":[{"id":"c","title":"C","items":[{"id":"i1","kind":"image"},{"id":"i2","kind":"text"}],"questions":[{"id":"q","kind":"yes-no","title":"ok?","revision":1}]}]}]}],"belt":[{"id":"b","label":"Go"}]}`),
		[]byte(`{"spaces":[{"id":"s","title":""}],"conversations":[{"id":"c","title":"\u202e","closed":true,"removeItems":["i1","i2"],"items":[{"id":"i3","kind":"link","url":"javascript:x"}],"removeQuestions":["q"],"questions":[{"id":"q2","kind":"choice","title":"pick","revision":2,"options":[]}]}],"belt":[]}`))
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		var raw Snapshot
		if jsonstrict.Unmarshal(base, &raw) != nil {
			return
		}
		s, rep, err := ParseSnapshot(base)
		if err != nil {
			return
		}
		st := NewState(s, rep)
		before := agentJSON(t, st.Snap)
		d, err := ParseDelta(delta)
		if err != nil {
			if !errors.Is(err, ErrDelta) {
				t.Fatalf("a refusal that does not wrap ErrDelta: %v", err)
			}
			return
		}
		got, _, err := st.Apply(d)
		if !bytes.Equal(before, agentJSON(t, st.Snap)) {
			t.Fatal("applying a delta changed the state it was applied to")
		}
		if err != nil {
			if !errors.Is(err, ErrDelta) {
				t.Fatalf("a refusal that does not wrap ErrDelta: %v", err)
			}
			return
		}
		oracle, _ := ParseDelta(delta) // Apply cleaned d's objects in place
		refApply(&raw, oracle)
		ws, wrep, err := ParseSnapshot(agentJSON(t, &raw))
		if err != nil {
			if got.Size() <= SnapshotCap && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("the delta applied, but the whole snapshot is refused: %v", err)
			}
			return
		}
		sameState(t, "fuzz", got, NewState(ws, wrep))
		if got.Size() > SnapshotCap {
			t.Fatalf("the state is %d bytes, over the cap", got.Size())
		}
	})
}

// refApply applies d to an agent's raw snapshot by the plain rules: a
// title to the first space or tab with that id, a conversation's changes
// to the first conversation with its id; removals take every object with
// the id, and an object put replaces the first with its id or is added at
// the end.
func refApply(s *Snapshot, d *Delta) {
	for _, t := range d.Spaces {
		for i := range s.Spaces {
			if s.Spaces[i].ID == t.ID {
				s.Spaces[i].Title = t.Title
				break
			}
		}
	}
	for _, t := range d.Tabs {
		for i := range s.Spaces {
			if s.Spaces[i].ID != t.Space {
				continue
			}
			for j := range s.Spaces[i].Tabs {
				if s.Spaces[i].Tabs[j].ID == t.ID {
					s.Spaces[i].Tabs[j].Title = t.Title
					break
				}
			}
			break
		}
	}
	for _, cd := range d.Conversations {
		c := findRaw(s, cd.ID)
		if c == nil {
			continue
		}
		if cd.Title != nil {
			c.Title = *cd.Title
		}
		if cd.Closed != nil {
			c.Closed = *cd.Closed
		}
		c.Items = refList(c.Items, cd.RemoveItems, cd.Items, func(it *Item) string { return it.ID })
		c.Questions = refList(c.Questions, cd.RemoveQuestions, cd.Questions, func(q *Question) string { return q.ID })
	}
	if d.Belt != nil {
		s.Belt = *d.Belt
	}
	if d.Starters != nil {
		s.Starters = *d.Starters
	}
}

func findRaw(s *Snapshot, id string) *Conversation {
	for i := range s.Spaces {
		for j := range s.Spaces[i].Tabs {
			for k := range s.Spaces[i].Tabs[j].Conversations {
				if c := &s.Spaces[i].Tabs[j].Conversations[k]; c.ID == id {
					return c
				}
			}
		}
	}
	return nil
}

func refList[T any](l []T, remove []string, put []T, id func(*T) string) []T {
	for _, r := range remove {
		out := l[:0:0]
		for i := range l {
			if id(&l[i]) != r {
				out = append(out, l[i])
			}
		}
		l = out
	}
	for _, e := range put {
		i := 0
		for i < len(l) && id(&l[i]) != id(&e) {
			i++
		}
		if i < len(l) {
			l[i] = e
		} else {
			l = append(l, e)
		}
	}
	return l
}
