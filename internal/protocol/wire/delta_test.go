package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Snapshot deltas: the differential test (deltas applied one after another
// give exactly the state whole reads give, cleaned), refusals, and a fuzz
// target whose oracle is the delta applied to the agent's raw snapshot
// and then cleaned whole.

// wholeState is what a whole read of raw gives: the agent's encoding,
// decoded and cleaned.
func wholeState(t testing.TB, raw *Snapshot) *State {
	t.Helper()
	data := agentJSON(t, raw)
	s, rep, err := ParseSnapshot(data)
	if err != nil {
		t.Fatalf("whole read: %v", err)
	}
	return NewState(s, rep)
}

// agentJSON encodes v as the reference agent does.
func agentJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// sameState fails unless got and want encode alike and got's size is its
// encoding's length.
func sameState(t *testing.T, step string, got, want *State) {
	t.Helper()
	g, w := agentJSON(t, got.Snap), agentJSON(t, want.Snap)
	if !bytes.Equal(g, w) {
		t.Fatalf("%s: the delta's state differs from the whole read's:\n got %.600s\nwant %.600s", step, g, w)
	}
	if got.Size() != len(g) {
		t.Fatalf("%s: the state's size is %d; its JSON is %d bytes", step, got.Size(), len(g))
	}
}

// hostile strings: controls, direction marks, a long line.
var deltaTexts = []string{"plain", "ünïcödé ✓", "bidi \u202e evil", "ctl \x00\x07 x", "", "  ", strings.Repeat("long ", 400), "line\nbreak"}

type gen struct {
	r    *rand.Rand
	next int
}

func (g *gen) id(prefix string) string {
	g.next++
	return fmt.Sprintf("%s%d", prefix, g.next)
}

func (g *gen) text() string { return deltaTexts[g.r.IntN(len(deltaTexts))] }

func (g *gen) item() Item {
	it := Item{ID: g.id("i"), Kind: KindText, Role: "agent", Text: g.text()}
	switch g.r.IntN(10) {
	case 0:
		it.Kind, it.Tool = KindToolCall, &ToolCall{Name: "bash", Output: g.text(), Status: "running"}
	case 1:
		it.Kind, it.URL = KindLink, "https://example.com/x"
	case 2:
		it.Kind, it.URL = KindLink, "javascript:alert(1)" // dropped (X6)
	case 3:
		it.Kind = "image" // dropped: unknown kind
	case 4:
		it.ID = "bad id " + it.ID // dropped: bad id
	case 5:
		it.Kind, it.Language = KindCode, "go"
	}
	return it
}

func (g *gen) question() Question {
	q := Question{ID: g.id("q"), Kind: AskYesNo, Title: g.text(), Revision: 1}
	if g.r.IntN(4) == 0 {
		q.Kind, q.Options = AskChoice, []Option{{ID: "a", Label: g.text()}}
	}
	return q
}

func (g *gen) snapshot() *Snapshot {
	s := &Snapshot{Spaces: []Space{{ID: "s", Title: "space", Tabs: []Tab{{ID: "t", Title: "tab"}, {ID: "u", Title: g.text()}}}}}
	for j := range s.Spaces[0].Tabs {
		for range 2 {
			c := Conversation{ID: g.id("c"), Title: g.text()}
			for range g.r.IntN(6) {
				c.Items = append(c.Items, g.item())
			}
			for range g.r.IntN(3) {
				c.Questions = append(c.Questions, g.question())
			}
			s.Spaces[0].Tabs[j].Conversations = append(s.Spaces[0].Tabs[j].Conversations, c)
		}
	}
	s.Belt = []Button{{ID: "b", Label: "Go"}}
	return s
}

// cloneSnapshot copies s deeply enough that mutating the copy's lists and
// items leaves s as it was.
func cloneSnapshot(s *Snapshot) *Snapshot {
	c := *s
	c.Spaces = slices.Clone(s.Spaces)
	for i := range c.Spaces {
		c.Spaces[i].Tabs = slices.Clone(c.Spaces[i].Tabs)
		for j := range c.Spaces[i].Tabs {
			tb := &c.Spaces[i].Tabs[j]
			tb.Conversations = slices.Clone(tb.Conversations)
			for k := range tb.Conversations {
				cv := &tb.Conversations[k]
				cv.Items = slices.Clone(cv.Items)
				for l := range cv.Items {
					if t := cv.Items[l].Tool; t != nil {
						cp := *t
						cv.Items[l].Tool = &cp
					}
				}
				cv.Questions = slices.Clone(cv.Questions)
				for l := range cv.Questions {
					cv.Questions[l].Options = slices.Clone(cv.Questions[l].Options)
				}
			}
		}
	}
	c.Belt, c.Starters = slices.Clone(s.Belt), slices.Clone(s.Starters)
	return &c
}

// mutate changes s the ways an agent does between two reads.
func (g *gen) mutate(s *Snapshot) {
	for range 1 + g.r.IntN(3) {
		tb := &s.Spaces[0].Tabs[g.r.IntN(len(s.Spaces[0].Tabs))]
		c := &tb.Conversations[g.r.IntN(len(tb.Conversations))]
		switch g.r.IntN(13) {
		case 0, 1, 2:
			c.Items = append(c.Items, g.item())
		case 3:
			if n := len(c.Items); n > 0 {
				c.Items[n-1].Text += " more"
				if t := c.Items[n-1].Tool; t != nil {
					t.Output += "\nmore output"
					t.Status = "done"
				}
			}
		case 4:
			if n := len(c.Items); n > 0 {
				i := g.r.IntN(n)
				c.Items = slices.Delete(c.Items, i, i+1)
			}
		case 5:
			if n := len(c.Items); n > 0 {
				i := g.r.IntN(n)
				c.Items[i] = Item{ID: c.Items[i].ID, Kind: "image"} // dropped from now on
			}
		case 6:
			c.Questions = append(c.Questions, g.question())
		case 7:
			if n := len(c.Questions); n > 0 {
				c.Questions = slices.Delete(c.Questions, 0, 1)
			}
		case 8:
			c.Title, c.Closed = g.text(), !c.Closed
		case 9:
			s.Spaces[0].Title, tb.Title = g.text(), g.text()
		case 10:
			s.Belt = append(s.Belt, Button{ID: g.id("b"), Label: g.text()})
			s.Starters = []Starter{{ID: "st", Label: g.text()}}
		case 12:
			// Many changes at once: appends, items made unusable, and
			// removals, past the few a list looks up by scanning.
			for range 6 {
				c.Items = append(c.Items, g.item())
			}
			for i := range c.Items {
				if g.r.IntN(4) == 0 {
					c.Items[i].Kind = "image"
				}
			}
			if n := len(c.Items); n > 3 {
				c.Items = slices.Delete(c.Items, 1, 3)
			}
		case 11:
			if n := len(c.Items); n > 1 {
				c.Items[0], c.Items[n-1] = c.Items[n-1], c.Items[0] // a move: removed and put at the end
			}
		}
	}
}

func TestDelta_X5_AppliedDeltasEqualWholeReads(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			g := &gen{r: rand.New(rand.NewPCG(seed, 7))}
			raw := g.snapshot()
			st := wholeState(t, raw)
			applied := 0
			for step := range 60 {
				next := cloneSnapshot(raw)
				g.mutate(next)
				want := wholeState(t, next)
				d, ok := Diff(raw, next)
				raw = next
				if !ok {
					st = want // the agent sends the whole snapshot
					continue
				}
				got, _, err := st.Apply(roundTrip(t, d))
				if err != nil {
					if !errors.Is(err, ErrDelta) {
						t.Fatalf("step %d: %v does not wrap ErrDelta", step, err)
					}
					st = want // refused: the next read is whole
					continue
				}
				sameState(t, fmt.Sprint("step ", step), got, want)
				st = got
				applied++
			}
			if applied < 20 {
				t.Fatalf("only %d of 60 changes went as deltas", applied)
			}
		})
	}
}

// roundTrip sends d the way an agent does and decodes it as the bridge.
func roundTrip(t testing.TB, d *Delta) *Delta {
	t.Helper()
	out, err := ParseDelta(agentJSON(t, d))
	if err != nil {
		t.Fatalf("decode the agent's delta: %v", err)
	}
	return out
}

func TestDelta_X4_Refused(t *testing.T) {
	base := &Snapshot{Spaces: []Space{{ID: "s", Title: "S", Tabs: []Tab{{ID: "t", Title: "T", Conversations: []Conversation{
		{ID: "c", Title: "C", Items: []Item{{ID: "i1", Kind: KindText, Text: "hi"}, {ID: "bad", Kind: "image"}}},
	}}}}}}
	big := strings.Repeat("x", 60_000)
	texts := func(prefix string, n int) []Item {
		var out []Item
		for i := range n {
			out = append(out, Item{ID: fmt.Sprint(prefix, i), Kind: KindText, Text: big})
		}
		return out
	}
	large := &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c", Items: texts("old", 40)}}}}}}}
	cases := []struct {
		name  string
		base  *Snapshot
		delta string
		want  string
	}{
		{"unknown conversation", base, `{"conversations":[{"id":"nope","items":[{"id":"i2","kind":"text"}]}]}`, "no conversation"},
		{"unknown space", base, `{"spaces":[{"id":"nope","title":"x"}]}`, "no space"},
		{"unknown tab", base, `{"tabs":[{"space":"s","id":"nope","title":"x"}]}`, "no tab"},
		{"dropped item made valid", base, `{"conversations":[{"id":"c","items":[{"id":"bad","kind":"text","text":"now fine"}]}]}`, "place is unknown"},
		{"unknown member", base, `{"conversations":[{"id":"c","itemz":[]}]}`, "broken JSON"},
		{"member twice", base, `{"belt":[],"belt":[]}`, "broken JSON"},
		{"wrong type", base, `{"conversations":[{"id":"c","closed":"yes"}]}`, "broken JSON"},
		{"not one value", base, `{} {}`, "broken JSON"},
		{"state over the cap", large, string(agentJSON(t, &Delta{Conversations: []ConversationDelta{{ID: "c", Items: texts("new", 30)}}})), "the cap is"},
		{"repeated conversation", &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c"}, {ID: "c"}}}}}}},
			`{"conversations":[{"id":"c","title":"x"}]}`, "repeated id"},
		{"conversation in two tabs", &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c"}}}, {ID: "u", Conversations: []Conversation{{ID: "c"}}}}}}},
			`{"conversations":[{"id":"c","title":"x"}]}`, "two tabs"},
		{"conversation twice", base, `{"conversations":[{"id":"c","title":"a"},{"id":"c","title":"b"}]}`, "twice"},
		{"item id given twice", &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c", Items: []Item{{ID: "i", Kind: KindText}, {ID: "i", Kind: KindText}}}}}}}}},
			`{"conversations":[{"id":"c","removeItems":["i"]}]}`, "id twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wholeState(t, tc.base)
			before := agentJSON(t, st.Snap)
			d, err := ParseDelta([]byte(tc.delta))
			if err == nil {
				_, _, err = st.Apply(d)
			}
			if err == nil || !errors.Is(err, ErrDelta) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want a refusal (ErrDelta) saying %q", err, tc.want)
			}
			if !bytes.Equal(before, agentJSON(t, st.Snap)) {
				t.Fatal("a refused delta changed the state it was applied to")
			}
		})
	}
}

// TestDelta_X4_OverCapBody: a delta body over 4 MiB is refused before it is
// decoded, as a snapshot is.
func TestDelta_X4_OverCapBody(t *testing.T) {
	_, _, err := DecodeDelta(bytes.NewReader(make([]byte, SnapshotCap+1)), -1)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrDelta) {
		t.Fatalf("got %v; want ErrTooLarge and ErrDelta", err)
	}
}

// TestDelta_AppendsShareTheBase: a delta applied to the newest state
// appends in place, never into a list an older state holds, and two deltas
// applied to one state do not see each other.
func TestDelta_AppendsShareTheBase(t *testing.T) {
	raw := &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{{ID: "c", Items: []Item{{ID: "i0", Kind: KindText, Text: "a"}}}}}}}}}
	st := wholeState(t, raw)
	add := func(st *State, id string) *State {
		t.Helper()
		ns, _, err := st.Apply(&Delta{Conversations: []ConversationDelta{{ID: "c", Items: []Item{{ID: id, Kind: KindText, Text: id}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return ns
	}
	a := add(st, "i1")
	b := add(st, "i2") // st is no longer the tip: b branches
	a2 := add(a, "i3")
	ids := func(st *State) string {
		var out []string
		for _, it := range st.Snap.Spaces[0].Tabs[0].Conversations[0].Items {
			out = append(out, it.ID)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		st   *State
		want string
	}{{st, "i0"}, {a, "i0,i1"}, {b, "i0,i2"}, {a2, "i0,i1,i3"}} {
		if got := ids(c.st); got != c.want {
			t.Errorf("items %s; want %s", got, c.want)
		}
	}
	// A line's tip grows its list in place, amortised (a branch's line
	// too, once it copied the list): 64 appends make a handful of arrays,
	// not 64, and never write into the base's.
	data := func(st *State) *Item { return &st.Snap.Spaces[0].Tabs[0].Conversations[0].Items[0] }
	for _, from := range []*State{a2, b} {
		arrays := map[*Item]bool{}
		cur := from
		for i := range 64 {
			cur = add(cur, fmt.Sprint("g", i))
			arrays[data(cur)] = true
		}
		if len(arrays) > 8 || arrays[data(st)] {
			t.Errorf("64 appends made %d arrays (or wrote into the whole read's)", len(arrays))
		}
	}
	if ids(b) != "i0,i2" || ids(a2) != "i0,i1,i3" {
		t.Errorf("appends after them changed states handed out: %s, %s", ids(b), ids(a2))
	}
	if !a2.Lineage.Unchanged(a.Lineage, "other") || a2.Lineage.Unchanged(a.Lineage, "c") || b.Lineage.Unchanged(st.Lineage, "other") {
		t.Error("the lineage does not tell what changed along a line, or relates a branch to its base")
	}
}

// BenchmarkHostileDelta applies deltas of n removals and n changes to a
// conversation of n items: the cost grows with n, not n squared (compare
// the sizes' ns/op).
func BenchmarkHostileDelta(b *testing.B) {
	for _, n := range []int{5_000, 20_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c := Conversation{ID: "c"}
			d := Delta{Conversations: []ConversationDelta{{ID: "c"}}}
			for i := range n {
				c.Items = append(c.Items, Item{ID: fmt.Sprint("i", i), Kind: KindText, Text: "x"})
				d.Conversations[0].RemoveItems = append(d.Conversations[0].RemoveItems, fmt.Sprint("i", i*2))
				d.Conversations[0].Items = append(d.Conversations[0].Items, Item{ID: fmt.Sprint("i", i*2+1), Kind: KindText, Text: "y"})
			}
			st := wholeState(b, &Snapshot{Spaces: []Space{{ID: "s", Tabs: []Tab{{ID: "t", Conversations: []Conversation{c}}}}}})
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := st.Apply(&d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
