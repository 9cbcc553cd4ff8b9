package sanitize

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

// lead describes a byte from 0x80 up as the first byte of a character,
// indexed by the byte less 0x80, so that a character is judged from its
// bytes with no decoding to a rune. In each entry:
//
//	bits 0–2  the length of the sequence it begins; 0 for a byte that
//	          begins none (a continuation byte, C0, C1, F5–FF)
//	bit 3     set when the character may be one X2 removes: every such
//	          character begins with C2 (C1 is C2 80–C2 9F), D8 (U+061C is
//	          D8 9C), E2 (U+200B–U+200F and U+202A–U+202E are E2 80 ..,
//	          U+2060 and U+2066–U+2069 are E2 81 ..), EF (U+FEFF is
//	          EF BB BF) or F3 (the tags U+E0000–U+E007F are F3 A0 80 80–
//	          F3 A0 81 BF)
//	bits 4–6  which second bytes are valid, an index into secondLo and
//	          secondHi: E0, ED, F0 and F4 allow fewer, so that overlong
//	          forms, surrogates and code points past U+10FFFF are invalid
//
// A string constant, so the table cannot change; TestLead checks it
// against unicode/utf8.
const lead = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 8_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 9_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // A_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // B_
	"\x00\x00\x0a\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02" + // C_
	"\x02\x02\x02\x02\x02\x02\x02\x02\x0a\x02\x02\x02\x02\x02\x02\x02" + // D_
	"\x13\x03\x0b\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x23\x03\x0b" + // E_
	"\x34\x04\x04\x0c\x44\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" // F_

// The valid second bytes of a sequence, by lead bits 4–6: 80–BF, then
// for E0, ED, F0 and F4; padded to 8 so that no index needs a check.
const (
	secondLo = "\x80\xA0\x80\x90\x80\x80\x80\x80"
	secondHi = "\xBF\xBF\x9F\xBF\x8F\xBF\xBF\xBF"
)

// leadMayDrop is lead's bit 3.
const leadMayDrop = 8

// fate is what X2 steps 0–2 do with a character.
type fate uint8

const (
	kept    fate = iota
	dropped      // a control or invisible character: removed (steps 1, 2)
	invalid      // a byte that begins no valid UTF-8 (step 0)
)

// char returns the length of the character that starts at s[i] and its
// fate. keep is the set of C0 controls the field keeps. An invalid byte
// has length 1, as with [utf8.DecodeRuneInString]: a truncated or broken
// sequence is invalid one byte at a time.
func char(s string, i int, keep uint32) (int, fate) {
	c := s[i]
	if c < 0x80 {
		if keptASCII(c, keep) {
			return 1, kept
		}
		return 1, dropped
	}
	n, x := validAt(s, i)
	if n == 0 {
		return 1, invalid
	}
	if x&leadMayDrop != 0 && removed(s, i) {
		return n, dropped
	}
	return n, kept
}

// removed reports whether the valid sequence at s[i], whose lead has
// leadMayDrop set, is a character X2 removes.
func removed(s string, i int) bool {
	c1 := s[i+1]
	switch s[i] {
	case 0xC2:
		return c1 < 0xA0 // C1
	case 0xD8:
		return c1 == 0x9C // U+061C
	case 0xE2:
		c2 := s[i+2]
		switch c1 {
		case 0x80: // U+200B–U+200F, U+202A–U+202E
			return c2 >= 0x8B && c2 <= 0x8F || c2 >= 0xAA && c2 <= 0xAE
		case 0x81: // U+2060, U+2066–U+2069
			return c2 == 0xA0 || c2 >= 0xA6 && c2 <= 0xA9
		}
	case 0xEF:
		return c1 == 0xBB && s[i+2] == 0xBF // U+FEFF
	case 0xF3:
		return c1 == 0xA0 && s[i+2] <= 0x81 // U+E0000–U+E007F
	}
	return false
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
	n, bad := dirtAt(s, 0)
	if bad {
		return n, replacement
	}
	return n, ""
}

// dirtAt measures what starts at s[i], where the cleaner stopped: n bytes
// to drop, and whether they are a run of invalid bytes that one U+FFFD
// replaces (step 0). Anything else that stops the cleaner is one
// character to drop.
func dirtAt(s string, i int) (n int, bad bool) {
	if s[i] < 0x80 {
		return 1, false
	}
	if n, _ = validAt(s, i); n > 0 {
		return n, false
	}
	n = 1
	for i+n < len(s) && s[i+n] >= 0x80 {
		if m, _ := validAt(s, i+n); m > 0 {
			break
		}
		n++
	}
	return n, true
}

// validAt returns the length of the valid UTF-8 sequence that starts at
// s[i], a byte from 0x80 up, or 0 if none does, and the lead entry of
// its first byte.
func validAt(s string, i int) (int, byte) {
	x := lead[s[i]&0x7F]
	n := int(x & 7)
	if n == 0 || len(s)-i < n {
		return 0, x
	}
	if c1 := s[i+1]; c1 < secondLo[x>>4&7] || c1 > secondHi[x>>4&7] ||
		n > 2 && s[i+2]&0xC0 != 0x80 || n > 3 && s[i+3]&0xC0 != 0x80 {
		return 0, x
	}
	return n, x
}
