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
//
// Its cost is the delta's plus at most a few passes over the list: a
// hostile delta of many removals or changes is never quadratic.
type list[T any] struct {
	elems   []T
	owned   bool // elems is this delta's own copy: change it in place
	inPlace bool // elems may grow in place past its length (its line's tip)
	frame   int  // JSON the list adds besides its elements and commas
	drops   map[string]struct{}
	// dropsChanged: drops is this delta's own copy, not the base state's.
	dropsChanged bool

	id    func(*T) string
	clean func(*T) string // cleans in place; why it must be dropped, or ""
	kind  string          // "item" or "question", for the report
	conv  string
	rep   *Report

	at   map[string]int // id -> index in elems, once built (many changes)
	gone map[int]bool   // indexes dropped by this delta, taken out at the end
}

// scanFew is how many changes a list takes by looking ids up from its
// end; more build an index once.
const scanFew = 4

// apply removes the ids in remove, then puts each of put in its place or
// at the end, and returns how much the state's JSON grew.
func (l *list[T]) apply(remove []string, put []T) (int, error) {
	n0 := len(l.elems)
	grow := 0
	if len(remove) > 0 {
		rm := make(map[string]struct{}, len(remove))
		for _, id := range remove {
			if _, ok := l.drops[id]; ok {
				l.dropDrop(id)
				continue
			}
			rm[id] = struct{}{}
		}
		if slices.ContainsFunc(l.elems, func(e T) bool { _, ok := rm[l.id(&e)]; return ok }) {
			kept := make([]T, 0, len(l.elems))
			for i := range l.elems {
				if _, ok := rm[l.id(&l.elems[i])]; ok {
					grow -= jsonLen(&l.elems[i]) + 1
					continue
				}
				kept = append(kept, l.elems[i])
			}
			l.elems, l.owned = kept, true
		}
	}
	if len(put) > scanFew {
		l.at = make(map[string]int, len(l.elems)+len(put))
		for i := range l.elems {
			l.at[l.id(&l.elems[i])] = i
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
				l.drop(i, id)
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
				// Append copies, never into the base's spare room, and
				// the copy is this delta's own.
				l.elems, l.owned = slices.Clip(l.elems), true
			}
			l.elems = append(l.elems, e)
			if l.at != nil {
				l.at[id] = len(l.elems) - 1
			}
		}
	}
	if len(l.gone) > 0 {
		kept := make([]T, 0, len(l.elems)-len(l.gone))
		for i := range l.elems {
			if !l.gone[i] {
				kept = append(kept, l.elems[i])
			}
		}
		l.elems, l.owned = kept, true
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

// index finds id in the list, or -1: from the index when there is one,
// else from the end, where a change most often is.
func (l *list[T]) index(id string) int {
	if l.at != nil {
		if i, ok := l.at[id]; ok {
			return i
		}
		return -1
	}
	for i := len(l.elems) - 1; i >= 0; i-- {
		if !l.gone[i] && l.id(&l.elems[i]) == id {
			return i
		}
	}
	return -1
}

// drop marks element i, of id, dropped by this delta; it is taken out at
// the end, so no index moves meanwhile.
func (l *list[T]) drop(i int, id string) {
	if l.gone == nil {
		l.gone = map[int]bool{}
	}
	l.gone[i] = true
	if l.at != nil {
		delete(l.at, id)
	}
}

func (l *list[T]) addDrop(id string) {
	l.ownDrops()
	l.drops[id] = struct{}{}
}

func (l *list[T]) dropDrop(id string) {
	l.ownDrops()
	delete(l.drops, id)
}

// ownDrops makes drops this delta's own copy, once.
func (l *list[T]) ownDrops() {
	if l.dropsChanged {
		return
	}
	m := make(map[string]struct{}, len(l.drops)+1)
	for k := range l.drops {
		m[k] = struct{}{}
	}
	l.drops, l.dropsChanged = m, true
}
