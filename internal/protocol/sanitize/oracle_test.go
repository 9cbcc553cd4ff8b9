package sanitize

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The cleaner as it was before the byte automaton, kept whole as
// a test-only oracle: FuzzCleanVsOracle checks that the cleaner gives
// the same output byte for byte and the same changed flag on any input,
// and BenchmarkMultilingualVsOracle runs both side by side. Only the
// names changed (oracle...), in code, not in its comments; it shares with
// the package only the constants of the spec (replacement, ellipsis,
// layout) and the unit type.

func oracleSize(u unit, s string) int {
	if u == inChars {
		return utf8.RuneCountInString(s)
	}
	return len(s)
}

func oracleFits(u unit, s string, limit int) bool {
	return len(s) <= limit || u == inChars && utf8.RuneCountInString(s) <= limit
}

// oracleClean applies X2 steps 0–3 to s. keep is the set of C0 controls the
// field keeps: 0, or layout for a multi-line field.
func oracleClean(s string, limit int, u unit, keep uint32) (string, bool) {
	limit = max(limit, 0)
	i := oracleCleanPrefix(s, keep)
	if i == len(s) && oracleFits(u, s, limit) {
		return s, false
	}
	if u == inBytes && len(s) <= limit {
		if out, ok := oracleCleanWhole(s, i, keep); ok {
			return out, true
		}
	}
	return oracleCleanCut(s, i, limit, u, keep), true
}

// oracleCleanWhole applies X2 steps 0–2 to s, of which s[:i] is known to be
// clean, when no cut is expected: s fits the limit in bytes, so the
// result does too unless U+FFFD for invalid bytes makes it longer than s.
// Then it reports false and cleanCut starts again. The result is built in
// one buffer the size of s, clean runs copied whole, and becomes the
// string without a copy: one allocation.
//
// This is the hot loop of cleaning dirty text, so it judges
// characters with cleanPrefix's code written out again rather than
// calling it (and char) once a character: TestCharEveryCodePoint and
// FuzzFastVsLegacy hold the copies to the same answers.
func oracleCleanWhole(s string, i int, keep uint32) (string, bool) {
	// buf holds the result: it is never longer than s, except by the
	// U+FFFD that replaces a run of invalid bytes, checked below. Copying
	// into a slice of known size, rather than appending, keeps bounds and
	// growth checks out of the loop.
	buf := make([]byte, len(s))
	w := copy(buf, s[:i]) // buf[:w] is the result so far
	start := i            // s[start:i] is clean and not yet copied
	for i < len(s) {
		c := s[i]
		n := 1 // the length of the character at i; 0 if it is invalid
		if c < 0x80 {
			if oracleKeptASCII(c, keep) {
				i++
				continue
			}
		} else {
			x := oracleLead[c&0x7F]
			if n = int(x & 7); n != 0 && len(s)-i >= n && s[i+1] >= oracleSecondLo[x>>4&7] && s[i+1] <= oracleSecondHi[x>>4&7] &&
				(n < 3 || s[i+2]&0xC0 == 0x80) && (n < 4 || s[i+3]&0xC0 == 0x80) {
				if x&oracleLeadMayDrop == 0 || !oracleRemoved(s, i) {
					i += n
					continue
				}
			} else {
				n = 0
			}
		}
		// s[i] starts what X2 removes: copy the clean run before it.
		if w+i-start > len(buf) {
			return "", false
		}
		w += oracleCopyRun(buf[w:], s[start:i])
		if n == 0 {
			// A run of invalid bytes becomes one U+FFFD, longer than
			// a run of one or two bytes.
			n, _ = oracleDirtAt(s, i)
			if w+len(replacement) > len(buf) {
				return "", false
			}
			w += copy(buf[w:], replacement)
		}
		i += n
		start = i
	}
	if w+len(s)-start > len(buf) {
		return "", false
	}
	w += copy(buf[w:], s[start:])
	if w == 0 {
		return "", true
	}
	// buf is not written again and nothing else holds it: the string
	// shares its bytes, so the result costs one allocation.
	return unsafe.String(&buf[0], w), true
}

// oracleCopyRun copies run to the start of dst, which has room for it. Most runs
// between two removed characters in dirty text are short, and a byte loop
// copies a short run faster than a call of memmove.
func oracleCopyRun(dst []byte, run string) int {
	if len(run) > 16 {
		return copy(dst, run)
	}
	dst = dst[:len(run)]
	for j := range dst {
		dst[j] = run[j]
	}
	return len(run)
}

// oracleCleanCut is clean for text that may have to be cut (X2 step 3), s[:i]
// known to be clean. Cleaned text goes into the result while it leaves
// room for the ellipsis. What would come after that point is at most two
// characters if the text is to fit (the ellipsis is one, or 3 bytes), so
// tail collects them: if the text ends, they fit and are written; if more
// follows, the ellipsis takes their place. The cut is decided in one pass,
// the result built in one buffer, and the text after the cut never read.
func oracleCleanCut(s string, i int, limit int, u unit, keep uint32) string {
	room, end := limit, ellipsis
	if e := oracleSize(u, ellipsis); limit >= e {
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
			n, bad := oracleDirtAt(s, i)
			next += n
			if bad && start == i {
				run = replacement
			} else if bad {
				next = i // the replacement is the next run
			}
		}
		if size := oracleSize(u, run); used+size <= room {
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
			if t, n, ok := oracleTail(s, run[k:], next, keep, limit-used, u); ok {
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
		i = next + oracleCleanPrefix(s[next:], keep)
	}
}

// oracleTail cleans first, then s from p on, into t, and reports false as soon
// as the result is longer than rem in u. rem is small: it is only ever
// asked for what may follow the room, at most two characters.
func oracleTail(s, first string, p int, keep uint32, rem int, u unit) (t [2 * utf8.UTFMax]byte, n int, ok bool) {
	put := func(c string) bool {
		if rem -= oracleSize(u, c); rem < 0 {
			return false
		}
		n += copy(t[n:], c)
		return true
	}
	if !put(first) {
		return t, 0, false
	}
	for p < len(s) {
		m, f := oracleChar(s, p, keep)
		switch f {
		case oracleKept:
			if !put(s[p : p+m]) {
				return t, 0, false
			}
		case oracleInvalid:
			m, _ = oracleDirtAt(s, p)
			if !put(replacement) {
				return t, 0, false
			}
		}
		p += m
	}
	return t, n, true
}

// oracleKeptASCII reports whether the ASCII byte c survives X2 step 1. keep is
// the set of C0 controls the field keeps.
func oracleKeptASCII(c byte, keep uint32) bool {
	// A shift of 32 or more yields 0, so bytes from ' ' up never hit keep.
	return c >= ' ' && c != 0x7F || keep>>c&1 != 0
}

// oracleLead describes a byte from 0x80 up as the first byte of a character,
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
const oracleLead = "" +
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
	oracleSecondLo = "\x80\xA0\x80\x90\x80\x80\x80\x80"
	oracleSecondHi = "\xBF\xBF\x9F\xBF\x8F\xBF\xBF\xBF"
)

// oracleLeadMayDrop is lead's bit 3.
const oracleLeadMayDrop = 8

// oracleFate is what X2 steps 0–2 do with a character.
type oracleFate uint8

const (
	oracleKept    oracleFate = iota
	oracleDropped            // a control or invisible character: removed (steps 1, 2)
	oracleInvalid            // a byte that begins no valid UTF-8 (step 0)
)

// oracleChar returns the length of the character that starts at s[i] and its
// fate. keep is the set of C0 controls the field keeps. An invalid byte
// has length 1, as with [utf8.DecodeRuneInString]: a truncated or broken
// sequence is invalid one byte at a time.
func oracleChar(s string, i int, keep uint32) (int, oracleFate) {
	c := s[i]
	if c < 0x80 {
		if oracleKeptASCII(c, keep) {
			return 1, oracleKept
		}
		return 1, oracleDropped
	}
	n, x := oracleValidAt(s, i)
	if n == 0 {
		return 1, oracleInvalid
	}
	if x&oracleLeadMayDrop != 0 && oracleRemoved(s, i) {
		return n, oracleDropped
	}
	return n, oracleKept
}

// oracleRemoved reports whether the valid sequence at s[i], whose lead has
// leadMayDrop set, is a character X2 removes.
func oracleRemoved(s string, i int) bool {
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

// oracleCleanPrefix returns the length of the longest prefix of s that X2
// steps 0–2 leave as it is. It is char inlined, with printable ASCII
// taken 8 bytes at a time.
func oracleCleanPrefix(s string, keep uint32) int {
	i := 0
	for i < len(s) {
		c := s[i]
		if c < 0x80 {
			if len(s)-i >= 8 && oraclePrintable8(s[i:]) {
				i += 8
				continue
			}
			if !oracleKeptASCII(c, keep) {
				return i
			}
			i++
			continue
		}
		n, x := oracleValidAt(s, i)
		if n == 0 || x&oracleLeadMayDrop != 0 && oracleRemoved(s, i) {
			return i
		}
		i += n
	}
	return i
}

// oraclePrintable8 reports whether the first 8 bytes of s are all printable
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
func oraclePrintable8(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	_ = s[7] // one bounds check; the compiler merges the loads below
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	return (w|(w+ones)|(w-0x20*ones))&highs == 0
}

// oracleDirtAt measures what starts at s[i], where cleanPrefix stopped: n bytes
// to drop, and whether they are a run of invalid bytes that one U+FFFD
// replaces (step 0). Anything else that stops cleanPrefix is one
// character to drop.
func oracleDirtAt(s string, i int) (n int, bad bool) {
	if s[i] < 0x80 {
		return 1, false
	}
	if n, _ = oracleValidAt(s, i); n > 0 {
		return n, false
	}
	n = 1
	for i+n < len(s) && s[i+n] >= 0x80 {
		if m, _ := oracleValidAt(s, i+n); m > 0 {
			break
		}
		n++
	}
	return n, true
}

// oracleValidAt returns the length of the valid UTF-8 sequence that starts at
// s[i], a byte from 0x80 up, or 0 if none does, and the lead entry of
// its first byte.
func oracleValidAt(s string, i int) (int, byte) {
	x := oracleLead[s[i]&0x7F]
	n := int(x & 7)
	if n == 0 || len(s)-i < n {
		return 0, x
	}
	if c1 := s[i+1]; c1 < oracleSecondLo[x>>4&7] || c1 > oracleSecondHi[x>>4&7] ||
		n > 2 && s[i+2]&0xC0 != 0x80 || n > 3 && s[i+3]&0xC0 != 0x80 {
		return 0, x
	}
	return n, x
}
