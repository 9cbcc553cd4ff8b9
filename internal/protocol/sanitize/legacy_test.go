package sanitize

import (
	"strings"
	"unicode/utf8"
)

// The cleaner as it was before it was made faster, kept whole and
// unchanged as a test-only reference: FuzzFastVsLegacy checks that the new
// one gives the same output byte for byte, and the benchmarks run both side
// by side. Only the names changed (legacy...). The constants and the unit
// type it shares are not part of the speed-up.

func legacyClean(s string, limit int, u unit, keep uint32) (string, bool) {
	limit = max(limit, 0)
	i := legacyCleanPrefix(s, keep)
	if i == len(s) && u.fits(s, limit) {
		return s, false
	}
	var c legacyCutter
	c.init(limit, u, len(s))
	for {
		// s[:i] needs no cleaning; s[i:] starts with what does.
		c.write(s[:i])
		s = s[i:]
		if s == "" || c.cut {
			break
		}
		n, repl := legacyDirt(s)
		c.write(repl)
		s = s[n:]
		i = legacyCleanPrefix(s, keep)
	}
	return c.done(), true
}

func legacyKeptASCII(c byte, keep uint32) bool {
	// A shift of 32 or more yields 0, so bytes from ' ' up never hit keep.
	return c >= ' ' && c != 0x7F || keep>>c&1 != 0
}

func legacyIsControl(r rune) bool {
	return r < ' ' || r >= 0x7F && r <= 0x9F
}

func legacyIsInvisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F: // zero width space, ZWNJ, ZWJ, LRM, RLM
	case r >= 0x202A && r <= 0x202E: // bidi embeddings and overrides
	case r >= 0x2066 && r <= 0x2069: // bidi isolates
	case r == 0x061C, r == 0x2060, r == 0xFEFF: // ALM, word joiner, BOM
	case r >= 0xE0000 && r <= 0xE007F: // tags: a whole hidden sentence
	default:
		return false
	}
	return true
}

func legacyCleanPrefix(s string, keep uint32) int {
	i := 0
	for i < len(s) {
		if len(s)-i >= 8 && legacyPrintable8(s[i:]) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if !legacyKeptASCII(c, keep) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 || legacyIsControl(r) || legacyIsInvisible(r) {
			// n == 1 with a byte from 0x80 up is invalid UTF-8.
			return i
		}
		i += n
	}
	return i
}

func legacyPrintable8(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	_ = s[7] // one bounds check; the compiler merges the loads below
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return (w|(w+ones)|(w-0x20*ones))&highs == 0
}

func legacyDirt(s string) (n int, repl string) {
	if !legacyStartsInvalid(s) {
		_, n = utf8.DecodeRuneInString(s)
		return n, "" // a control or invisible character
	}
	n = 1
	for n < len(s) && legacyStartsInvalid(s[n:]) {
		n++
	}
	return n, replacement
}

func legacyStartsInvalid(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1
}

type legacyCutter struct {
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
// input of n bytes. It is a method, not a constructor, so the legacyCutter can
// live on the caller's stack and the builder's buffer is the only
// allocation.
func (c *legacyCutter) init(limit int, u unit, n int) {
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
func (c *legacyCutter) write(s string) {
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
func (c *legacyCutter) writeChar(ch string) {
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
func (c *legacyCutter) done() string {
	if c.cut {
		c.b.WriteString(c.end)
	} else {
		c.b.Write(c.tail[:c.tailLen])
	}
	return c.b.String()
}
