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

// cutter collects cleaned text and cuts it to a limit (X2 step 3).
//
// Text goes into b while it leaves room for the ellipsis. The characters
// after that point wait in tail: if the text ends, they fit and are
// written; if more follows, the ellipsis takes their place. So the cut is
// decided in one pass, and b is never written and then taken back.
type cutter struct {
	b     strings.Builder
	u     unit
	limit int    // the size the result must fit
	room  int    // the size b may reach: the limit less the ellipsis
	used  int    // the size of b
	end   string // the ellipsis, or "" when the limit cannot hold it
	cut   bool   // the text did not fit; the ellipsis replaces the rest

	// tail holds what fits between the room and the limit. In bytes that
	// is under an ellipsis plus one character that straddles the room (at
	// most 3+4-1 bytes); in chars it is one character.
	tail     [2 * utf8.UTFMax]byte
	tailLen  int // bytes in tail
	tailSize int // size of tail in u
}

// init readies c for a result of at most limit in u, built from an
// input of n bytes. It is a method, not a constructor, so the cutter can
// live on the caller's stack and the builder's buffer is the only
// allocation.
func (c *cutter) init(limit int, u unit, n int) {
	c.u, c.limit, c.room, c.end = u, limit, limit, ellipsis
	if e := u.size(ellipsis); limit >= e {
		c.room -= e
	} else {
		c.end = ""
	}
	// The result is rarely longer than the input (only invalid UTF-8 can
	// make it so) and never longer than the limit allows.
	if u == inChars && limit < n/utf8.UTFMax {
		n = limit * utf8.UTFMax
	} else if u == inBytes {
		n = min(n, limit)
	}
	c.b.Grow(n)
}

// write adds s, which must be valid UTF-8, unless the text is already cut.
func (c *cutter) write(s string) {
	if c.cut {
		return
	}
	if c.tailLen == 0 {
		// Write in one go the longest run of whole characters that fits
		// the room in bytes; a character is at least a byte, so it fits
		// in chars too. The rest, if any, goes a character at a time.
		k := min(len(s), c.room-c.used)
		for k < len(s) && k > 0 && !utf8.RuneStart(s[k]) {
			k--
		}
		c.b.WriteString(s[:k])
		c.used += c.u.size(s[:k])
		s = s[k:]
	}
	for s != "" && !c.cut {
		_, n := utf8.DecodeRuneInString(s)
		c.writeChar(s[:n])
		s = s[n:]
	}
}

// writeChar adds the one character ch.
func (c *cutter) writeChar(ch string) {
	n := len(ch)
	if c.u == inChars {
		n = 1
	}
	switch {
	case c.tailLen == 0 && c.used+n <= c.room:
		c.b.WriteString(ch)
		c.used += n
	case c.used+c.tailSize+n <= c.limit:
		c.tailLen += copy(c.tail[c.tailLen:], ch)
		c.tailSize += n
	default:
		c.cut = true
	}
}

// done ends the text, with the ellipsis if it was cut, and returns it.
func (c *cutter) done() string {
	if c.cut {
		c.b.WriteString(c.end)
	} else {
		c.b.Write(c.tail[:c.tailLen])
	}
	return c.b.String()
}
