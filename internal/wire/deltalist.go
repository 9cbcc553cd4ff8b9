package wire

import "slices"

// list applies a delta's removals and changes to one list of a
// conversation (its items or its questions), cleaning only what the delta
// brings, so that the result is what cleaning the agent's whole new list
// would keep.
//
// The agent's list may hold objects cleaning dropped: one with a bad id
// never matches a valid one and changes nothing; one with a valid id and
// unusable content is in drops. A list that gave an id twice takes no
// delta at all (the caller refuses it).
type list[T any] struct {
	elems   []T
	owned   bool // elems is this delta's own copy: change it in place
	inPlace bool // elems may grow in place past its length (its line's tip)
	frame   int  // JSON the list adds besides its elements and commas
	drops   map[string]struct{}
	// dropsChanged: drops is a new map, not the base state's.
	dropsChanged bool

	id    func(*T) string
	clean func(*T) string // cleans in place; why it must be dropped, or ""
	kind  string          // "item" or "question", for the report
	conv  string
	rep   *Report
}

// apply removes the ids in remove, then puts each of put in its place or
// at the end, and returns how much the state's JSON grew.
func (l *list[T]) apply(remove []string, put []T) (int, error) {
	n0 := len(l.elems)
	grow := 0
	for _, id := range remove {
		if _, ok := l.drops[id]; ok {
			l.dropDrop(id)
			continue
		}
		if i := l.index(id); i >= 0 {
			grow -= jsonLen(&l.elems[i]) + 1
			l.own()
			l.elems = slices.Delete(l.elems, i, i+1)
		}
	}
	for k := range put {
		e := put[k] // a copy: the delta's own stays as sent
		id := l.id(&e)
		if !validID(id) {
			l.rep.drop(l.conv, l.kind, "bad id "+quoteClip(id))
			continue
		}
		reason := l.clean(&e)
		if _, ok := l.drops[id]; ok {
			if reason == "" {
				return 0, deltaErr("%s %q of conversation %q was dropped before, so its place is unknown; only a whole snapshot can place it", l.kind, clip(id), clip(l.conv))
			}
			l.rep.dropID(l.conv, l.kind, id, reason)
			continue
		}
		i := l.index(id)
		switch {
		case reason != "":
			l.rep.dropID(l.conv, l.kind, id, reason)
			l.addDrop(id)
			if i >= 0 {
				grow -= jsonLen(&l.elems[i]) + 1
				l.own()
				l.elems = slices.Delete(l.elems, i, i+1)
			}
		case i >= 0:
			grow += jsonLen(&e) - jsonLen(&l.elems[i])
			if i < n0 {
				l.own() // the base state's own element
			}
			l.elems[i] = e
		default:
			grow += jsonLen(&e) + 1
			if !l.owned && !l.inPlace {
				l.elems = slices.Clip(l.elems) // append copies: never into the base's spare room
			}
			l.elems = append(l.elems, e)
		}
	}
	// The frame and the comma the counts above gave each element: a list
	// of n elements has n-1 commas, and an empty list is left out.
	grow += listFrame(len(l.elems), l.frame) - listFrame(n0, l.frame)
	return grow, nil
}

// listFrame is what a list of n elements adds to its object's JSON beside
// its elements, counting one comma for each element.
func listFrame(n, frame int) int {
	if n == 0 {
		return 0
	}
	return frame - 1
}

// own makes elems this delta's own copy, once.
func (l *list[T]) own() {
	if !l.owned {
		l.elems = slices.Clone(l.elems)
		l.owned = true
	}
}

// index finds id in the list, from the end: a change is most often near
// it.
func (l *list[T]) index(id string) int {
	for i := len(l.elems) - 1; i >= 0; i-- {
		if l.id(&l.elems[i]) == id {
			return i
		}
	}
	return -1
}

func (l *list[T]) addDrop(id string) {
	m := make(map[string]struct{}, len(l.drops)+1)
	for k := range l.drops {
		m[k] = struct{}{}
	}
	m[id] = struct{}{}
	l.drops, l.dropsChanged = m, true
}

func (l *list[T]) dropDrop(id string) {
	m := make(map[string]struct{}, len(l.drops))
	for k := range l.drops {
		if k != id {
			m[k] = struct{}{}
		}
	}
	l.drops, l.dropsChanged = m, true
}
