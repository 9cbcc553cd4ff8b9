package sanitize

import "unicode/utf8"

// layout is the set of C0 controls a multi-line field keeps (X2 step 1),
// as a bit mask indexed by byte value.
const layout uint32 = 1<<'\t' | 1<<'\n'

// replacement stands in for each run of invalid UTF-8 (step 0).
const replacement = "\uFFFD"

// keptASCII reports whether the ASCII byte c survives X2 step 1. keep is
// the set of C0 controls the field keeps.
func keptASCII(c byte, keep uint32) bool {
	// A shift of 32 or more yields 0, so bytes from ' ' up never hit keep.
	return c >= ' ' && c != 0x7F || keep>>c&1 != 0
}

// isControl reports whether r is a C0 control, DEL or a C1 control.
func isControl(r rune) bool {
	return r < ' ' || r >= 0x7F && r <= 0x9F
}

// isInvisible reports whether r is one of the invisible or direction
// characters of X2 step 2. They draw nothing, or reorder what is drawn, so
// they let an agent show a reader one text and mean another.
func isInvisible(r rune) bool {
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

// cleanPrefix returns the length of the longest prefix of s that X2
// steps 0–2 leave as it is.
func cleanPrefix(s string, keep uint32) int {
	i := 0
	for i < len(s) {
		if len(s)-i >= 8 && printable8(s[i:]) {
			i += 8
			continue
		}
		if c := s[i]; c < utf8.RuneSelf {
			if !keptASCII(c, keep) {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if n == 1 || isControl(r) || isInvisible(r) {
			// n == 1 with a byte from 0x80 up is invalid UTF-8.
			return i
		}
		i += n
	}
	return i
}

// printable8 reports whether the first 8 bytes of s are all printable
// ASCII (0x20–0x7E), testing them as one word, the way utf8.ValidString
// skips ASCII. Per byte of the word, the high bit of
//
//	w          is set for a byte from 0x80 up,
//	w + 0x01…  is set for 0x7F, the one ASCII byte that carries into it,
//	w - 0x20…  is set for a byte under 0x20, which borrows.
//
// A carry or borrow can cross into the next byte only from a byte that
// already set its own high bit, so the word is flagged exactly when some
// byte is not printable.
func printable8(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	_ = s[7] // one bounds check; the compiler merges the loads below
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return (w|(w+ones)|(w-0x20*ones))&highs == 0
}

// dirt measures what X2 steps 0–2 change at the start of s, which must
// not be clean: n bytes to drop, and repl to write in their place.
func dirt(s string) (n int, repl string) {
	if !startsInvalid(s) {
		_, n = utf8.DecodeRuneInString(s)
		return n, "" // a control or invisible character
	}
	n = 1
	for n < len(s) && startsInvalid(s[n:]) {
		n++
	}
	return n, replacement
}

// startsInvalid reports whether s starts with a byte that begins no valid
// UTF-8 sequence.
func startsInvalid(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return r == utf8.RuneError && n == 1
}
