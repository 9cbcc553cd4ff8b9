package wire

import (
	"reflect"
	"slices"
)

// Diff returns the delta that turns base into cur, as an agent sends it,
// and false when a delta cannot say it: a space, tab or conversation added,
// removed or moved, or an id given twice in a list. base and cur are the
// agent's own snapshots, before any cleaning.
//
// It compares lists element by element; strings the two snapshots share
// compare at the cost of their pointers.
func Diff(base, cur *Snapshot) (*Delta, bool) {
	if len(base.Spaces) != len(cur.Spaces) {
		return nil, false
	}
	d := &Delta{}
	for i := range cur.Spaces {
		bs, cs := &base.Spaces[i], &cur.Spaces[i]
		if bs.ID != cs.ID || len(bs.Tabs) != len(cs.Tabs) {
			return nil, false
		}
		if bs.Title != cs.Title {
			d.Spaces = append(d.Spaces, SpaceTitle{ID: cs.ID, Title: cs.Title})
		}
		for j := range cs.Tabs {
			bt, ct := &bs.Tabs[j], &cs.Tabs[j]
			if bt.ID != ct.ID || len(bt.Conversations) != len(ct.Conversations) {
				return nil, false
			}
			if bt.Title != ct.Title {
				d.Tabs = append(d.Tabs, TabTitle{Space: cs.ID, ID: ct.ID, Title: ct.Title})
			}
			for k := range ct.Conversations {
				bc, cc := &bt.Conversations[k], &ct.Conversations[k]
				if bc.ID != cc.ID {
					return nil, false
				}
				cd, ok := diffConversation(bc, cc, false)
				if !ok {
					return nil, false
				}
				if cd != nil {
					d.Conversations = append(d.Conversations, *cd)
				}
			}
		}
	}
	if !reflect.DeepEqual(base.Belt, cur.Belt) {
		belt := slices.Clone(cur.Belt)
		if belt == nil {
			belt = []Button{}
		}
		d.Belt = &belt
	}
	if !reflect.DeepEqual(base.Starters, cur.Starters) {
		st := slices.Clone(cur.Starters)
		if st == nil {
			st = []Starter{}
		}
		d.Starters = &st
	}
	return d, true
}

// DiffConversation returns the change from b to c, two states of one
// conversation the bridge holds (cleaned: no id is given twice in a list,
// and a list once handed out is never changed), as a ConversationDelta
// applies it: nil when nothing changed. The device API answers a read
// since a revision with it.
//
// An item or question list that only grew in place (a snapshot delta's
// appends) costs the change alone: its first elements are the same memory.
// Otherwise lists are compared element by element, as Diff does.
func DiffConversation(b, c *Conversation) *ConversationDelta {
	cd, _ := diffConversation(b, c, true)
	return cd
}

// diffConversation is nil when nothing changed. cleaned: b and c are
// states the bridge holds (see DiffConversation).
func diffConversation(b, c *Conversation, cleaned bool) (*ConversationDelta, bool) {
	cd := &ConversationDelta{ID: c.ID}
	changed := false
	if b.Title != c.Title {
		t := c.Title
		cd.Title, changed = &t, true
	}
	if b.Closed != c.Closed {
		cl := c.Closed
		cd.Closed, changed = &cl, true
	}
	var ok bool
	cd.RemoveItems, cd.Items, ok = diffList(b.Items, c.Items, cleaned, func(it *Item) string { return it.ID }, itemEqual)
	if !ok {
		return nil, false
	}
	cd.RemoveQuestions, cd.Questions, ok = diffList(b.Questions, c.Questions, cleaned, func(q *Question) string { return q.ID },
		func(x, y *Question) bool { return reflect.DeepEqual(x, y) })
	if !ok {
		return nil, false
	}
	if !changed && len(cd.RemoveItems)+len(cd.Items)+len(cd.RemoveQuestions)+len(cd.Questions) == 0 {
		return nil, true
	}
	return cd, true
}

// diffList says how to turn list b into c: ids to remove, then elements
// to put (in place when the id is there, else at the end). The common
// case, a list that only grew and changed near its end, costs one pass
// without maps. cleaned: ids are unique in b and in c, and a prefix c
// shares with b in memory is b's content (the bridge's states, never
// changed once made).
func diffList[T any](b, c []T, cleaned bool, id func(*T) string, eq func(x, y *T) bool) (remove []string, put []T, ok bool) {
	n := len(b)
	if cleaned && n <= len(c) && (n == 0 || &b[0] == &c[0]) {
		return nil, c[n:len(c):len(c)], true // read only: never appended to
	}
	if n <= len(c) {
		same := true
		for i := range n {
			if id(&b[i]) != id(&c[i]) {
				same = false
				break
			}
		}
		if same && (cleaned || unique(c, id)) {
			for i := range n {
				if !eq(&b[i], &c[i]) {
					put = append(put, c[i])
				}
			}
			return nil, append(put, c[n:]...), true
		}
	}
	if !cleaned && (!unique(b, id) || !unique(c, id)) {
		return nil, nil, false
	}
	inC := make(map[string]struct{}, len(c))
	for i := range c {
		inC[id(&c[i])] = struct{}{}
	}
	// What stays of b, in b's order, must be c's first elements; the rest
	// of b that stays is removed and put again at the end.
	k := 0
	for i := range b {
		bid := id(&b[i])
		if _, stays := inC[bid]; !stays {
			remove = append(remove, bid)
			continue
		}
		if k < len(c) && id(&c[k]) == bid {
			if !eq(&b[i], &c[k]) {
				put = append(put, c[k])
			}
			k++
			continue
		}
		remove = append(remove, bid)
	}
	return remove, append(put, c[k:]...), true
}

// unique reports whether no id is given twice in l.
func unique[T any](l []T, id func(*T) string) bool {
	if len(l) < 2 {
		return true
	}
	seen := make(map[string]struct{}, len(l))
	for i := range l {
		k := id(&l[i])
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

func itemEqual(x, y *Item) bool {
	if x.ID != y.ID || x.Kind != y.Kind || x.Role != y.Role || x.Text != y.Text || x.Language != y.Language || x.URL != y.URL {
		return false
	}
	if x.Tool == nil || y.Tool == nil {
		return x.Tool == y.Tool
	}
	return *x.Tool == *y.Tool
}
