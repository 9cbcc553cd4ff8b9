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
// not dirt (D8 8C is the Arabic comma, E2 80 94 a dash).
//
// A stop is judged by its kind, found from the byte and the state before
// it in a second table packed the same way (stops): a control, C2 80–9F,
// D8 9C, E2 80, E2 81, EF BB or F3. Each kind says, as a mask and a bit
// set, which characters that begin so X2 removes, and the state after the
// stop byte, so that the automaton reads on from the next byte rather
// than starting again after the character: finding the next stop does
// not wait for the judgement of this one. Any other stop (invalid bytes,
// F4, the last 3 bytes of the text) is judged by char.

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

// The kinds of usual stop, indexes into automaton.kinds; kindNone, 0,
// for any other stop.
const (
	kindNone    = iota
	kindControl // an ASCII control the field does not keep, or DEL
	kindC1      // C2 or D8, then 80–9F but 9C: C1 if the lead is C2
	kind9C      // C2 9C (C1) or D8 9C (U+061C)
	kindE280    // E2 or EF, then 80
	kindE281    // E2 or EF, then 81
	kindEFBB    // E2 or EF, then BB
	kindF3      // F3, a tag's lead
)

// stopKind describes a kind of usual stop. The character that holds the
// stop byte begins there (a control, F3) or one byte before (the lead C2,
// D8, E2 or EF). Read from its beginning as a big-endian number of 4
// bytes, key, it is one X2 removes exactly when key&mask == want and bit
// key>>shift&63 of last is set. mask and want check what the kind leaves
// open: which lead it has, and the bytes after the stop byte, with the
// top two bits of each continuation byte, so that the character is whole
// and valid; last holds the values of the low 6 bits of its last byte
// that make it one X2 removes. A kind that always removes its character
// has mask 0 and last all ones.
type stopKind struct {
	mask, want uint32
	last       uint64
	shift      uint8  // where the last byte is in key
	n          uint8  // the character's length
	resume     uint64 // the state after the stop byte; stStop for kindNone
}

// stopKinds returns the kinds of usual stop, indexed by kind.
func stopKinds() [8]stopKind {
	const all = ^uint64(0)
	return [8]stopKind{
		kindNone:    {resume: stStop},
		kindControl: {last: all, shift: 24, n: 1, resume: stText},
		kindC1:      {mask: 0xFF000000, want: 0xC2000000, last: all, shift: 16, n: 2, resume: stText},
		kind9C:      {last: all, shift: 16, n: 2, resume: stText},
		// U+200B–U+200F (E2 80 8B–8F), U+202A–U+202E (E2 80 AA–AE)
		kindE280: {mask: 0xFFFFC000, want: 0xE2808000, last: 0x1F<<0x0B | 0x1F<<0x2A, shift: 8, n: 3, resume: stCont1},
		// U+2060 (E2 81 A0), U+2066–U+2069 (E2 81 A6 and the three after it)
		kindE281: {mask: 0xFFFFC000, want: 0xE2818000, last: 1<<0x20 | 0xF<<0x26, shift: 8, n: 3, resume: stCont1},
		// U+FEFF (EF BB BF)
		kindEFBB: {mask: 0xFFFFC000, want: 0xEFBB8000, last: 1 << 0x3F, shift: 8, n: 3, resume: stCont1},
		// U+E0000–U+E007F (F3 A0 80–81 80–BF)
		kindF3: {mask: 0xFFFFFEC0, want: 0xF3A08080, last: all, n: 4, resume: stCont3},
	}
}

// kindOf is the kind of the stop at byte b in state st: its kind when
// the automaton stops there on its way through a character X2 may
// remove, kindNone otherwise. keep is the set of C0 controls the field
// keeps.
func kindOf(st uint64, b byte, keep uint32) uint64 {
	switch {
	case st == stText && b < 0x80 && !keptASCII(b, keep):
		return kindControl
	case st == stText && b == 0xF3:
		return kindF3
	case st == stC2D8 && b == 0x9C:
		return kind9C
	case st == stC2D8 && b >= 0x80 && b < 0xA0:
		return kindC1
	case st == stE2EF && b == 0x80:
		return kindE280
	case st == stE2EF && b == 0x81:
		return kindE281
	case st == stE2EF && b == 0xBB:
		return kindEFBB
	}
	return kindNone
}

// automaton is the table of the automaton for one set of kept controls.
// It is built on first use and only ever read.
type automaton struct {
	step  [256]uint64 // for byte b, the next state of state st at bit st
	stops [256]uint64 // for byte b, the kind of a stop there in state st at bit st
	kinds [8]stopKind
	keep  uint32 // the C0 controls the field keeps
}

func newAutomaton(keep uint32) *automaton {
	a := &automaton{keep: keep, kinds: stopKinds()}
	for b := range 256 {
		for _, st := range states {
			a.step[b] |= step(st, byte(b), keep) << st
			a.stops[b] |= kindOf(st, byte(b), keep) << st
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

// scan runs the automaton from s[i] in state st and returns the index of
// the byte it stopped at, or len(s), with the state before that byte.
// Printable ASCII between characters goes 8 bytes at a time.
func (a *automaton) scan(s string, i int, st uint64) (int, uint64) {
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
	st := uint64(stText)
	for {
		j, prev := a.scan(s, i, st)
		if j == len(s) && prev == stText {
			return j, 0, kept
		}
		if p, n, st = a.usual(s, j, prev); st != stStop {
			if n > 0 {
				return p, n, dropped
			}
			i = j + 1
			continue
		}
		if p, n, f = a.judge(s, j, prev); f != kept {
			return p, n, f
		}
		i, st = p, stText
	}
}

// usual judges the stop at s[j], prev the state before it, if it is a
// usual one: one of its kinds, with the 4 bytes from where its character
// begins in s. It returns p, where the character begins, its length n if
// X2 removes it and 0 if not, and the state in which to read on from
// s[j+1]. For any other stop it returns the state stStop: judge judges
// it. Judged with no branch on its kind, so that dirt of every kind mixed
// costs no more than one.
func (a *automaton) usual(s string, j int, prev uint64) (p, n int, resume uint64) {
	p = j - int(b2u(prev != stText))
	if len(s)-p < 4 {
		return p, 0, stStop // j may be len(s)
	}
	k := &a.kinds[a.stops[s[j]]>>(prev&63)&7]
	b := s[p : p+4]
	key := uint32(b[3]) | uint32(b[2])<<8 | uint32(b[1])<<16 | uint32(b[0])<<24
	hit := b2u(key&k.mask == k.want) & uint32(k.last>>(key>>(k.shift&31)&63))
	return p, int(k.n) & -int(hit&1), k.resume
}

// judge judges the stop at s[j], prev the state before it, that usual
// does not: it returns the character there that X2 changes, its length
// and fate, or, when the stop was not dirt, the boundary after it with
// fate kept. It judges by char, from the character that holds the byte
// before the stop: everything before that character is valid UTF-8 (the
// character itself may not be, when the automaton read on into it after
// a usual stop).
func (a *automaton) judge(s string, j int, prev uint64) (p, n int, f fate) {
	p = j
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

// b2u is 1 for true and 0 for false; the compiler makes it a SETcc.
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
