package sanitize

import (
	"strings"
	"unicode/utf8"
)

// ellipsis ends a text that was cut (X2 step 3).
const ellipsis = "…"

// unit is what a limit counts.
type unit uint8

const (
	inBytes unit = iota
	inChars
)

// size measures s in u.
func (u unit) size(s string) int {
	if u == inChars {
		return utf8.RuneCountInString(s)
	}
	return len(s)
}

// fits reports whether s is at most limit long in u. It counts characters
// only when the byte length alone cannot tell.
func (u unit) fits(s string, limit int) bool {
	return len(s) <= limit || u == inChars && utf8.RuneCountInString(s) <= limit
}

// cleanCut is clean for text that may have to be cut (X2 step 3), s[:i]
// known to be clean. Cleaned text goes into the result while it leaves
// room for the ellipsis. What would come after that point is at most two
// characters if the text is to fit (the ellipsis is one, or 3 bytes), so
// tail collects them: if the text ends, they fit and are written; if more
// follows, the ellipsis takes their place. The cut is decided in one pass,
// the result built in one buffer, and the text after the cut never read.
func cleanCut(s string, i int, limit int, u unit, a *automaton) string {
	room, end := limit, ellipsis
	if e := u.size(ellipsis); limit >= e {
		room -= e
	} else {
		end = ""
	}
	var b strings.Builder
	if u == inChars {
		b.Grow(min(len(s), utf8.UTFMax*limit) + len(replacement))
	} else {
		b.Grow(min(len(s)+len(replacement), limit))
	}
	used := 0  // the size of b in u
	start := 0 // s[start:i] is clean and not yet written
	for {
		run, next, last := s[start:i], i, i == len(s)
		if !last {
			n, bad := dirtAt(s, i)
			next += n
			if bad && start == i {
				run = replacement
			} else if bad {
				next = i // the replacement is the next run
			}
		}
		if size := u.size(run); used+size <= room {
			b.WriteString(run)
			used += size
		} else {
			// Write what fits the room, whole characters; the rest of the
			// text either fits the limit or is cut.
			k := 0
			if u == inBytes {
				k = room - used
				for k > 0 && !utf8.RuneStart(run[k]) {
					k--
				}
				used += k
			} else {
				for ; used < room; used++ {
					_, n := utf8.DecodeRuneInString(run[k:])
					k += n
				}
			}
			b.WriteString(run[:k])
			if t, n, ok := tail(s, run[k:], next, a.keep, limit-used, u); ok {
				b.Write(t[:n])
			} else {
				b.WriteString(end)
			}
			return b.String()
		}
		if last {
			return b.String()
		}
		start = next
		i, _, _ = a.next(s, next)
	}
}

// tail cleans first, then s from p on, into t, and reports false as soon
// as the result is longer than rem in u. rem is small: it is only ever
// asked for what may follow the room, at most two characters.
func tail(s, first string, p int, keep uint32, rem int, u unit) (t [2 * utf8.UTFMax]byte, n int, ok bool) {
	put := func(c string) bool {
		if rem -= u.size(c); rem < 0 {
			return false
		}
		n += copy(t[n:], c)
		return true
	}
	if !put(first) {
		return t, 0, false
	}
	for p < len(s) {
		m, f := char(s, p, keep)
		switch f {
		case kept:
			if !put(s[p : p+m]) {
				return t, 0, false
			}
		case invalid:
			m, _ = dirtAt(s, p)
			if !put(replacement) {
				return t, 0, false
			}
		}
		p += m
	}
	return t, n, true
}
