package wire

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// State is a cleaned snapshot as the bridge keeps it, with what a delta
// needs to apply to it at the cost of the change: where each conversation
// is, which ids cleaning dropped for their content, and the state's size.
// A State and its snapshot are never changed once made; Apply makes a new
// one that shares every part the delta does not touch.
type State struct {
	Snap *Snapshot
	// Lineage tells which conversations changed between two states of
	// one agent, without comparing them (see Lineage).
	Lineage *Lineage

	// noDelta says why no delta may apply ("" when one may): cleaning
	// dropped a space, tab or conversation for a repeated id, or an id
	// names two conversations, so a delta's ids could mean either.
	noDelta string
	convs   map[string]convPos    // where each conversation is
	dropped map[string]*convDrops // by conversation: ids dropped for their content
	size    atomic.Int64          // compact JSON length of Snap; -1 until needed
}

type convPos struct{ space, tab, conv int }

// convDrops are the valid ids of a conversation's items and questions that
// cleaning dropped for their content. Such an object is still in the
// agent's list, at a place the bridge does not know, so a delta that
// makes it valid again is refused. Never changed once made.
type convDrops struct {
	items, questions map[string]struct{}
	// repeated: a list gave an id twice; a delta could not tell which.
	repeated bool
}

// Lineage relates the states of one agent read by whole snapshots and
// deltas: the states a whole read and the deltas after it make are one
// line, and each conversation records the generation that last changed
// it. Only the device API reads it (through view.Agent), to skip hashing
// conversations a delta did not touch.
type Lineage struct {
	line *line
	gen  uint64
	conv map[string]uint64 // conversation id -> generation of its last change; absent: 0
	head uint64            // generation of the last change outside conversations
}

// line is one whole read and the deltas applied after it. tip is the
// generation of its newest state: only a delta applied to the tip extends
// the line (and may append to the tip's lists in place); one applied to an
// older state starts a line of its own.
type line struct {
	tip atomic.Uint64
	// owns lists the conversations whose items (bit 1) and questions
	// (bit 2) a borrowed line allocated itself, which it may grow in
	// place. Only the Apply that extends the tip (or made the line)
	// touches it.
	owns map[string]uint8
	// borrowed: the line began at an older state of another line, whose
	// lists it shares; it never grows them in place.
	borrowed bool
}

// Unchanged reports whether conversation id is the same in l's state as in
// from's: both are on one line, l no older than from, and no delta between
// them touched it. False whenever it cannot tell.
func (l *Lineage) Unchanged(from *Lineage, id string) bool {
	if l == nil || from == nil || l.line != from.line || l.gen < from.gen {
		return false
	}
	return l.conv[id] <= from.gen
}

// HeadUnchanged is Unchanged for everything outside conversations: titles
// of spaces and tabs, belt and starters.
func (l *Lineage) HeadUnchanged(from *Lineage) bool {
	if l == nil || from == nil || l.line != from.line || l.gen < from.gen {
		return false
	}
	return l.head <= from.gen
}

// NewState makes the state of a whole read from its cleaned snapshot and
// the report of its cleaning.
func NewState(s *Snapshot, rep Report) *State {
	st := &State{Snap: s, convs: map[string]convPos{}, Lineage: &Lineage{line: &line{}}}
	st.size.Store(-1)
	for i, sp := range s.Spaces {
		for j, tb := range sp.Tabs {
			for k, c := range tb.Conversations {
				if _, dup := st.convs[c.ID]; dup {
					st.noDelta = fmt.Sprintf("conversation id %q is in two tabs", clip(c.ID))
				}
				st.convs[c.ID] = convPos{i, j, k}
			}
		}
	}
	for _, d := range rep.Dropped {
		if d.Conversation == "" {
			// A belt or its starters come whole in a delta: only a space,
			// tab or conversation given twice makes a delta's ids unsure.
			if d.Repeated && !strings.HasPrefix(d.What, "belt") && !strings.HasPrefix(d.What, "starter") {
				st.noDelta = "cleaning dropped " + d.What + " for a repeated id"
			}
			continue
		}
		if d.ID == "" {
			continue // a bad id: never matches a valid one, so it changes nothing
		}
		if st.dropped == nil {
			st.dropped = map[string]*convDrops{}
		}
		cd := st.dropped[d.Conversation]
		if cd == nil {
			cd = &convDrops{}
			st.dropped[d.Conversation] = cd
		}
		switch {
		case d.Repeated:
			cd.repeated = true
		case len(d.What) > 4 && d.What[:4] == "item":
			cd.items = addID(cd.items, d.ID)
		default:
			cd.questions = addID(cd.questions, d.ID)
		}
	}
	return st
}

func addID(m map[string]struct{}, id string) map[string]struct{} {
	if m == nil {
		m = map[string]struct{}{}
	}
	m[id] = struct{}{}
	return m
}

// Deltas reports whether a delta may apply to st; when not, the bridge
// does not ask for one.
func (st *State) Deltas() bool { return st != nil && st.noDelta == "" }

// Size is the length of st's snapshot encoded as compact JSON without
// HTML escaping: the measure the cap holds a delta's state to.
func (st *State) Size() int {
	n := st.size.Load()
	if n < 0 {
		n = int64(jsonLen(st.Snap))
		st.size.Store(n)
	}
	return int(n)
}

// Apply applies d to st and returns the new state, with what cleaning
// dropped from the delta. It cleans only what d brings; the result is
// exactly the state a whole read of the agent's new snapshot would give.
// A delta that does not apply cleanly (an id st does not have, an object
// it cannot place, a state over the cap) is refused with an error wrapping
// ErrDelta, and st is unchanged.
func (st *State) Apply(d *Delta) (*State, Report, error) {
	var rep Report
	if st.noDelta != "" {
		return nil, rep, deltaErr("%s", st.noDelta)
	}
	size := st.Size()
	tip := st.Lineage.line.tip.CompareAndSwap(st.Lineage.gen, st.Lineage.gen+1)
	lin := &Lineage{line: st.Lineage.line, gen: st.Lineage.gen + 1, conv: st.Lineage.conv, head: st.Lineage.head}
	if !tip {
		lin = &Lineage{line: &line{borrowed: true}}
	}
	a := applier{snap: *st.Snap, tip: tip, line: lin.line, rep: &rep}
	ns := &State{Lineage: lin, convs: st.convs, dropped: st.dropped}
	changed := map[string]struct{}{}
	head := false
	// A delta that names a space, tab or conversation by an id that is not
	// valid changes nothing: a whole read drops such an object. Lookups go
	// through maps made once, so no delta costs more than a pass over the
	// state's outline and its own length.
	var spaces map[string]int
	var tabs map[[2]string]convPos
	if len(d.Spaces)+len(d.Tabs) > 0 {
		spaces, tabs = map[string]int{}, map[[2]string]convPos{}
		for i, sp := range a.snap.Spaces {
			spaces[sp.ID] = i
			for j, tb := range sp.Tabs {
				tabs[[2]string{sp.ID, tb.ID}] = convPos{space: i, tab: j}
			}
		}
	}
	for _, t := range d.Spaces {
		if !validID(t.ID) {
			continue
		}
		i, ok := spaces[t.ID]
		if !ok {
			return nil, rep, deltaErr("the snapshot has no space %q", clip(t.ID))
		}
		sp := a.space(i)
		title := titleOr(t.Title, t.ID)
		size += jsonLen(title) - jsonLen(sp.Title)
		sp.Title, head = title, true
	}
	for _, t := range d.Tabs {
		if !validID(t.Space) || !validID(t.ID) {
			continue
		}
		p, ok := tabs[[2]string{t.Space, t.ID}]
		if !ok {
			return nil, rep, deltaErr("the snapshot has no tab %q in space %q", clip(t.ID), clip(t.Space))
		}
		tb := a.tab(p.space, p.tab)
		title := titleOr(t.Title, t.ID)
		size += jsonLen(title) - jsonLen(tb.Title)
		tb.Title, head = title, true
	}
	for i := range d.Conversations {
		cd := &d.Conversations[i]
		if !validID(cd.ID) {
			continue
		}
		pos, ok := st.convs[cd.ID]
		if !ok {
			return nil, rep, deltaErr("the snapshot has no conversation %q", clip(cd.ID))
		}
		if _, twice := changed[cd.ID]; twice {
			return nil, rep, deltaErr("it names conversation %q twice", clip(cd.ID))
		}
		grow, err := a.conversation(ns, pos, cd)
		if err != nil {
			return nil, rep, err
		}
		size += grow
		changed[cd.ID] = struct{}{}
	}
	if d.Belt != nil {
		belt := cleanBelt(slices.Clone(*d.Belt), &rep)
		size += listField("belt", belt) - listField("belt", a.snap.Belt)
		a.snap.Belt, head = belt, true
	}
	if d.Starters != nil {
		starters := cleanStarters(slices.Clone(*d.Starters), &rep)
		size += listField("starters", starters) - listField("starters", a.snap.Starters)
		a.snap.Starters, head = starters, true
	}
	if size > SnapshotCap {
		return nil, rep, deltaErr("the state it makes is %d bytes; the cap is %d", size, SnapshotCap)
	}
	if tip {
		if len(changed) > 0 {
			lin.conv = make(map[string]uint64, len(st.Lineage.conv)+len(changed))
			for id, g := range st.Lineage.conv {
				lin.conv[id] = g
			}
			for id := range changed {
				lin.conv[id] = lin.gen
			}
		}
		if head {
			lin.head = lin.gen
		}
	}
	ns.Snap = &a.snap
	ns.size.Store(int64(size))
	return ns, rep, nil
}

// applier builds a new snapshot from base, copying each list on the way
// down to a part it changes, once.
type applier struct {
	snap Snapshot
	tip  bool  // the base is its line's tip: its own lists may grow in place
	line *line // the new state's line
	rep  *Report

	spaces bool            // snap.Spaces is a copy
	tabs   map[int]bool    // snap.Spaces[i].Tabs is a copy
	convs  map[[2]int]bool // snap.Spaces[i].Tabs[j].Conversations is a copy
}

// grows reports whether a list (bit 1 items, bit 2 questions) of
// conversation id may grow in place: the base is its line's tip, and the
// line made the list or began with a whole read.
func (a *applier) grows(id string, list uint8) bool {
	return a.tip && (!a.line.borrowed || a.line.owns[id]&list != 0)
}

// own records that the new state's line allocated a list of conversation
// id itself, when owned says so and the line is borrowed.
func (a *applier) own(id string, list uint8, owned bool) {
	if !owned || !a.line.borrowed {
		return
	}
	if a.line.owns == nil {
		a.line.owns = map[string]uint8{}
	}
	a.line.owns[id] |= list
}

func (a *applier) space(i int) *Space {
	if !a.spaces {
		a.snap.Spaces = slices.Clone(a.snap.Spaces)
		a.spaces = true
	}
	return &a.snap.Spaces[i]
}

func (a *applier) tab(i, j int) *Tab {
	sp := a.space(i)
	if a.tabs == nil {
		a.tabs = map[int]bool{}
	}
	if !a.tabs[i] {
		sp.Tabs = slices.Clone(sp.Tabs)
		a.tabs[i] = true
	}
	return &sp.Tabs[j]
}

func (a *applier) conv(p convPos) *Conversation {
	tb := a.tab(p.space, p.tab)
	if a.convs == nil {
		a.convs = map[[2]int]bool{}
	}
	if k := [2]int{p.space, p.tab}; !a.convs[k] {
		tb.Conversations = slices.Clone(tb.Conversations)
		a.convs[k] = true
	}
	return &tb.Conversations[p.conv]
}

// Sizes of the JSON a list adds to its conversation: `,"items":[` and `]`,
// `,"questions":[` and `]`, besides its elements and commas.
const (
	itemsFrame     = len(`,"items":[]`)
	questionsFrame = len(`,"questions":[]`)
)

// conversation applies cd to the conversation at p and returns how much
// the state's JSON grew.
func (a *applier) conversation(ns *State, p convPos, cd *ConversationDelta) (int, error) {
	drops := ns.dropped[cd.ID]
	if drops != nil && drops.repeated && (len(cd.Items) > 0 || len(cd.RemoveItems) > 0 || len(cd.Questions) > 0 || len(cd.RemoveQuestions) > 0) {
		return 0, deltaErr("conversation %q gave an id twice in a list; only a whole snapshot says which is meant", clip(cd.ID))
	}
	c := a.conv(p)
	head := jsonLen(Conversation{ID: c.ID, Title: c.Title, Closed: c.Closed})
	if cd.Title != nil {
		c.Title = titleOr(*cd.Title, c.ID)
	}
	if cd.Closed != nil {
		c.Closed = *cd.Closed
	}
	grow := jsonLen(Conversation{ID: c.ID, Title: c.Title, Closed: c.Closed}) - head
	var itemDrops, questionDrops map[string]struct{}
	if drops != nil {
		itemDrops, questionDrops = drops.items, drops.questions
	}
	items := list[Item]{elems: c.Items, inPlace: a.grows(cd.ID, 1), frame: itemsFrame, drops: itemDrops,
		id: func(it *Item) string { return it.ID }, clean: cleanItem, kind: "item", conv: cd.ID, rep: a.rep}
	g, err := items.apply(cd.RemoveItems, cd.Items)
	if err != nil {
		return 0, err
	}
	grow += g
	questions := list[Question]{elems: c.Questions, inPlace: a.grows(cd.ID, 2), frame: questionsFrame, drops: questionDrops,
		id: func(q *Question) string { return q.ID }, clean: cleanQuestion, kind: "question", conv: cd.ID, rep: a.rep}
	g, err = questions.apply(cd.RemoveQuestions, cd.Questions)
	if err != nil {
		return 0, err
	}
	grow += g
	c.Items, c.Questions = items.elems, questions.elems
	a.own(cd.ID, 1, items.owned)
	a.own(cd.ID, 2, questions.owned)
	if items.dropsChanged || questions.dropsChanged {
		nd := &convDrops{items: items.drops, questions: questions.drops}
		m := make(map[string]*convDrops, len(ns.dropped)+1)
		for k, v := range ns.dropped {
			m[k] = v
		}
		m[cd.ID] = nd
		ns.dropped = m
	}
	return grow, nil
}

// Since reports whether l's state comes from from's by deltas alone (one
// line, l no older): then Unchanged is false only for conversations a
// delta touched.
func (l *Lineage) Since(from *Lineage) bool {
	return l != nil && from != nil && l.line == from.line && l.gen >= from.gen
}
