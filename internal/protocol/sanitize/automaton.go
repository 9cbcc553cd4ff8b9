package sanitize

import "sync"

// The cleaner finds what X2 changes with an automaton that reads one byte
// a step and never decodes a character. Its state is a shift amount and
// its table holds, for each byte, the next state of every state packed
// 6 bits apart in one uint64 (a "shift DFA"): a step is one load and one
// shift, with no branch on the kind of character, so text that changes
// script every few words costs no mispredicted branches.
//
// The automaton follows UTF-8 exactly, so that text it reads to the end
// is valid. It stops (state stStop) at every byte that begins or may
// complete something X2 changes: an ASCII control the field does not
// keep, a byte that makes the text invalid, and the first two bytes of
// the characters X2 removes (C2 80–9F, D8 9C, E2 80, E2 81, EF BB) or
// the lead of one it judges whole (F3 for the tags, F4). Some stops are
// not dirt (D8 8C is the Arabic comma, E2 80 94 a dash): each stop is
// judged exactly by dropLen, or failing that by char, and the automaton
// starts again after the character.

// The states of the automaton: shift amounts, 6 bits apart. stStop is 0
// so that testing for it needs no mask.
const (
	stStop  = 0  // stopped: the byte begins or completes what X2 may change
	stText  = 6  // between characters
	stCont1 = 12 // one continuation byte (80–BF) to go
	stCont2 = 18 // two to go
	stCont3 = 24 // three to go
	stE0    = 30 // after E0: A0–BF, then one (no overlong forms)
	stED    = 36 // after ED: 80–9F, then one (no surrogates)
	stF0    = 42 // after F0: 90–BF, then two (no overlong forms)
	stC2D8  = 48 // after C2 or D8: stop at C2 80–9F (C1) and D8 80–9F (U+061C)
	stE2EF  = 54 // after E2 or EF: stop at E2 80, E2 81 and EF BB
)

// usualStop is the set of states before a stop that dropLen can judge.
const usualStop uint64 = 1<<stText | 1<<stC2D8 | 1<<stE2EF

var states = [...]uint64{stStop, stText, stCont1, stCont2, stCont3, stE0, stED, stF0, stC2D8, stE2EF}

// step is the automaton's transition: the state after byte b in state st.
// keep is the set of C0 controls the field keeps.
func step(st uint64, b byte, keep uint32) uint64 {
	switch {
	case st == stStop:
		return stStop
	case b < 0x80:
		if st == stText && keptASCII(b, keep) {
			return stText
		}
		return stStop
	case b < 0xC0: // a continuation byte
		switch {
		case st == stCont1, st == stC2D8 && b >= 0xA0:
			return stText
		case st == stCont2, st == stE0 && b >= 0xA0, st == stED && b < 0xA0,
			st == stE2EF && b != 0x80 && b != 0x81 && b != 0xBB:
			return stCont1
		case st == stCont3, st == stF0 && b >= 0x90:
			return stCont2
		}
		return stStop
	case st != stText:
		return stStop // a lead where a continuation byte belongs
	}
	switch {
	case b == 0xC2, b == 0xD8:
		return stC2D8
	case b == 0xE2, b == 0xEF:
		return stE2EF
	case b >= 0xC3 && b <= 0xDF:
		return stCont1
	case b == 0xE0:
		return stE0
	case b == 0xED:
		return stED
	case b >= 0xE1 && b <= 0xEF:
		return stCont2
	case b == 0xF0:
		return stF0
	case b == 0xF1, b == 0xF2:
		return stCont3
	}
	return stStop // C0, C1, F5–FF begin nothing; F3 and F4 are judged whole
}

// automaton is the table of the automaton for one set of kept controls.
// It is built once, before main, and only ever read.
type automaton struct {
	step [256]uint64 // for byte b, the next state of state st at bit st
	keep uint32      // the C0 controls the field keeps
}

func newAutomaton(keep uint32) *automaton {
	a := &automaton{keep: keep}
	for b := range 256 {
		for _, st := range states {
			a.step[b] |= step(st, byte(b), keep) << st
		}
	}
	return a
}

// The two automata are built on first use, not when a program starts:
// collie's hook adapter starts once per tool call and may clean nothing.
var (
	lineAutomaton  = sync.OnceValue(func() *automaton { return newAutomaton(0) })
	blockAutomaton = sync.OnceValue(func() *automaton { return newAutomaton(layout) })
)

// automatonFor returns the automaton of a field that keeps keep: 0 (a
// single-line field) or layout (a multi-line one).
func automatonFor(keep uint32) *automaton {
	if keep == layout {
		return blockAutomaton()
	}
	if keep != 0 {
		panic("sanitize: no automaton for this set of controls")
	}
	return lineAutomaton()
}

// scan runs the automaton from i, a character boundary, and returns the
// index of the byte it stopped at, or len(s), with the state before that
// byte. Printable ASCII between characters goes 8 bytes at a time.
func (a *automaton) scan(s string, i int) (int, uint64) {
	st := uint64(stText)
	for len(s)-i >= 8 {
		if printable8(s[i:]) && st&63 == stText {
			i += 8
			continue
		}
		// Eight steps written out: one bounds check for the eight.
		b := s[i : i+8]
		s0 := a.step[b[0]] >> (st & 63)
		if s0&63 == stStop {
			return i, st & 63
		}
		s1 := a.step[b[1]] >> (s0 & 63)
		if s1&63 == stStop {
			return i + 1, s0 & 63
		}
		s2 := a.step[b[2]] >> (s1 & 63)
		if s2&63 == stStop {
			return i + 2, s1 & 63
		}
		s3 := a.step[b[3]] >> (s2 & 63)
		if s3&63 == stStop {
			return i + 3, s2 & 63
		}
		s4 := a.step[b[4]] >> (s3 & 63)
		if s4&63 == stStop {
			return i + 4, s3 & 63
		}
		s5 := a.step[b[5]] >> (s4 & 63)
		if s5&63 == stStop {
			return i + 5, s4 & 63
		}
		s6 := a.step[b[6]] >> (s5 & 63)
		if s6&63 == stStop {
			return i + 6, s5 & 63
		}
		st = a.step[b[7]] >> (s6 & 63)
		if st&63 == stStop {
			return i + 7, s6 & 63
		}
		i += 8
	}
	for ; i < len(s); i++ {
		next := a.step[s[i]] >> (st & 63)
		if next&63 == stStop {
			return i, st & 63
		}
		st = next
	}
	return i, st & 63
}

// next returns the first character at or after i, a boundary, that X2
// steps 0–2 change: its index p, its length n (for invalid bytes, the
// run that one U+FFFD replaces) and its fate, never kept. p is len(s)
// when there is none.
func (a *automaton) next(s string, i int) (p, n int, f fate) {
	for {
		j, prev := a.scan(s, i)
		if j == len(s) && prev == stText {
			return j, 0, kept
		}
		if p, n, f = a.judge(s, j, prev); f != kept {
			return p, n, f
		}
		i = p
	}
}

// judge judges the stop at s[j], prev the state before it: it returns
// the character there that X2 changes, its length and fate, or, when
// the stop was not dirt, the boundary after it with fate kept.
func (a *automaton) judge(s string, j int, prev uint64) (p, n int, f fate) {
	// The usual stop: the character begins at j, or at j-1 when j is the
	// second byte of one that may be removed. Judged with no branch on
	// its kind, so that dirt of every kind mixed costs no more than one.
	p = j - int(b2u(prev != stText))
	if usualStop>>prev&1 != 0 {
		if n = dropLen(s, p, a.keep); n > 0 {
			return p, n, dropped
		}
	}
	// Anything else is judged by char, from the character that holds the
	// byte before the stop: everything before j is valid UTF-8.
	if prev != stText {
		p = j - 1
		for s[p]&0xC0 == 0x80 {
			p--
		}
	}
	for last := min(j, len(s)-1); p <= last; p += n {
		if n, f = char(s, p, a.keep); f == invalid {
			n, _ = dirtAt(s, p)
			return p, n, f
		} else if f == dropped {
			return p, n, f
		}
	}
	return p, 0, kept
}

// prefix returns the length of the longest prefix of s that X2 steps 0–2
// leave as it is.
func (a *automaton) prefix(s string) int {
	p, _, _ := a.next(s, 0)
	return p
}

// dropLen returns the length of the character at s[p] if X2 removes it
// and 0 if it does not or cannot tell from the 4 bytes at p (near the
// end of s). It reads the character's bytes as one big-endian number, the
// key, and compares that with the encodings of what X2 removes, with no
// branch. Every range holds only whole, valid encodings, so a key that
// matches is a character X2 removes.
func dropLen(s string, p int, keep uint32) int {
	if len(s)-p < 4 {
		return 0
	}
	b := s[p : p+4]
	n := seqLen[b[0]]
	key := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) >> ((32 - 8*n) & 31)
	hit := b2u(key < 0x20)&(^keep>>(key&31)) | // C0 the field does not keep
		b2u(key == 0x7F) | // DEL
		b2u(key-0xC280 < 0x20) | // C1: C2 80–C2 9F
		b2u(key == 0xD89C) | // U+061C
		b2u(key-0xE2808B < 5) | // U+200B–U+200F
		b2u(key-0xE280AA < 5) | // U+202A–U+202E
		b2u(key == 0xE281A0) | // U+2060
		b2u(key-0xE281A6 < 4) | // U+2066–U+2069
		b2u(key == 0xEFBBBF) | // U+FEFF
		b2u(key&0xFFFFFEC0 == 0xF3A08080) // U+E0000–U+E007F: F3 A0 80–81 80–BF
	// A continuation byte (n 0) matches no range: its key is 4 bytes
	// from 80 up, and the only 4-byte range begins with F3.
	return int(n) & -int(hit)
}

// b2u is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// seqLen is the length of the sequence a byte begins if it is valid: 1
// for ASCII, 0 for a continuation byte, 2 for C0–DF, 3 for E0–EF and 4
// for F0–FF. dropLen's ranges hold no invalid lead, so C0, C1 and F5–FF
// need no entry of their own.
const seqLen = "" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 0_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 1_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 2_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 3_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 4_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 5_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 6_
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // 7_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 8_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // 9_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // A_
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" + // B_
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02" + // C_
	"\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02\x02" + // D_
	"\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03\x03" + // E_
	"\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04\x04" // F_
