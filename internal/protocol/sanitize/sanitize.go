// Package sanitize cleans untrusted durable-agent text (spec X1–X6).
//
// Collie cleans every string from a durable agent before anything else
// reads it (X1). [Line], [Block] and [Label] apply the steps of X2, in order:
//
//  0. Invalid UTF-8 becomes U+FFFD: each run of consecutive invalid bytes
//     becomes one U+FFFD, as with [strings.ToValidUTF8]. One replacement
//     per run rather than per byte keeps junk from tripling in size, and the
//     mark still shows the reader that something was lost.
//  1. Control characters go: C0 (U+0000–U+001F), DEL and C1
//     (U+0080–U+009F). [Block] keeps '\n' and '\t' but removes '\r' like
//     any other control: a CRLF line end becomes "\n", and a lone '\r',
//     which would let output written for a terminal hide the start of a
//     line, is dropped.
//  2. Invisible and direction characters go: U+200B–U+200F, U+061C,
//     U+202A–U+202E, U+2060, U+2066–U+2069, U+FEFF and the tag characters
//     U+E0000–U+E007F.
//  3. What is left is cut at a whole character (a code point, never inside
//     its UTF-8 bytes) so that, with "…" (U+2026) appended, it fits the
//     limit. A limit too small to hold even the ellipsis (under 3 bytes, or
//     0 characters) cuts without one; a negative limit counts as 0.
//
// Every result is valid UTF-8, fits its limit, and comes back unchanged,
// with changed false, when cleaned again. The changed result is the X3
// "Text shortened" signal: true whenever a step removed or replaced
// anything, or the text was cut.
//
// Text that needs no change, the usual case, is returned as is without
// allocating; otherwise the result is built in one pass with one
// allocation (a second only when U+FFFD makes it outgrow the input).
// What X2 changes is found by an automaton that reads a byte a step with
// no branch on the kind of character (automaton.go), the usual dirt is
// judged without a branch on its kind either while the automaton reads
// on, clean runs are copied whole, and text past a cut is never read.
// Mixed-script text with hostile characters in it is cleaned about 4
// times as fast as by the cleaner before the automaton
// (BenchmarkMultilingualVsOracle), clean multi-byte text 3–8 times.
//
// Ids (X5) and links (X6) are never repaired: [ValidID] and [CheckLink]
// only say whether the object that carries them is kept. [CheckSend]
// checks text the user sends to an agent before it goes (X4).
package sanitize

import (
	"unsafe"
)

// Limits of X4, in bytes unless the name says Chars.
const (
	// TitleBytes limits the title of a space, tab, conversation or question.
	TitleBytes = 256
	// LabelBytes limits the label of an option, a form field or a starter.
	LabelBytes = 128
	// BeltChars limits the label of a belt button, in characters.
	BeltChars = 16
	// RationaleBytes limits the rationale of a question.
	RationaleBytes = 2048
	// OutputBytes limits the output of a tool call.
	OutputBytes = 16384
	// SummaryBytes limits the summary of a tool call. X4 gives the tool
	// call one row, so its summary shares the output's limit rather than
	// a smaller one the spec never names.
	SummaryBytes = OutputBytes
	// MessageBytes limits the text of a message or reply.
	MessageBytes = 65536
	// CodeBytes limits the text of a markdown or code item.
	CodeBytes = 32768
	// SendMinBytes and SendMaxBytes bound text sent to a durable agent.
	SendMinBytes = 1
	SendMaxBytes = 32768
	// IDMaxBytes limits an id (X5).
	IDMaxBytes = 128
	// LinkMaxChars limits the address of a link item (X6).
	LinkMaxChars = 2048
)

// Line cleans a single-line field (a title or a label): it removes every
// control character, '\n' and '\t' included, and the invisible ones, then
// cuts the text to limit bytes.
func Line(s string, limit int) (out string, changed bool) {
	return clean(s, limit, inBytes, 0)
}

// Block cleans a multi-line field (item text, a tool call's output and
// summary, a question's rationale) like [Line], but keeps '\n' and '\t'.
func Block(s string, limit int) (out string, changed bool) {
	return clean(s, limit, inBytes, layout)
}

// Label cleans a single-line field limited in characters rather than
// bytes, such as a belt button (X4). The ellipsis counts as one of the
// maxChars characters.
func Label(s string, maxChars int) (out string, changed bool) {
	return clean(s, maxChars, inChars, 0)
}

// clean applies X2 steps 0–3 to s. keep is the set of C0 controls the
// field keeps: 0, or layout for a multi-line field.
func clean(s string, limit int, u unit, keep uint32) (string, bool) {
	limit = max(limit, 0)
	a := automatonFor(keep)
	i := a.prefix(s)
	if i == len(s) && u.fits(s, limit) {
		return s, false
	}
	if u == inBytes && len(s) <= limit {
		if out, ok := cleanWhole(s, i, a); ok {
			return out, true
		}
	}
	return cleanCut(s, i, limit, u, a), true
}

// cleanWhole applies X2 steps 0–2 to s, of which s[:i] is known to be
// clean, when no cut is expected: s fits the limit in bytes, so the
// result does too unless U+FFFD for invalid bytes makes it longer than s.
// Then it reports false and cleanCut starts again. The result is built in
// one buffer the size of s, clean runs copied whole, and becomes the
// string without a copy: one allocation.
func cleanWhole(s string, i int, a *automaton) (string, bool) {
	// buf holds the result: it is never longer than s, except by the
	// U+FFFD that replaces a run of invalid bytes, checked below. Copying
	// into a slice of known size, rather than appending, keeps bounds and
	// growth checks out of the loop.
	//
	// buf has runSlack bytes more than that, so that a short run is
	// copied as one block of that size whatever its length: no call and
	// no branch on the length.
	buf := make([]byte, len(s)+runSlack)
	w := copy(buf, s[:i]) // buf[:w] is the result so far
	start := i            // s[start:i] is clean and not yet copied
	st := uint64(stText)  // the automaton's state at s[i]
	for {
		j, prev := a.scan(s, i, st)
		if j == len(s) && prev == stText {
			break
		}
		var p, n int
		if p, n, st = a.usual(s, j, prev); st != stStop {
			// A usual stop: the automaton reads on from s[j+1] while
			// the character at p is judged. The run before it is
			// copied whether the character goes or stays (then it
			// begins the next run), so that nothing here branches on
			// the judgement.
			if w+p-start > len(s) {
				return "", false // U+FFFD made the result outgrow s
			}
			w = copyRun(buf, w, s, start, p)
			start = p + n
			i = j + 1
			continue
		}
		// Any other stop: the automaton starts again after it.
		st = stText
		var f fate
		if p, n, f = a.judge(s, j, prev); f == kept {
			i = p
			continue
		}
		// s[p:p+n] is what X2 removes or replaces: copy the clean run
		// before it.
		if w+p-start > len(s) {
			return "", false
		}
		w = copyRun(buf, w, s, start, p)
		if f == invalid {
			// A run of invalid bytes becomes one U+FFFD, longer than
			// a run of one or two bytes.
			if w+len(replacement) > len(s) {
				return "", false
			}
			w += copy(buf[w:], replacement)
		}
		i = p + n
		start = i
	}
	if w+len(s)-start > len(s) {
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

// copyRun copies s[start:p], a clean run, to buf[w:] and returns the end
// of what buf holds. buf has room for it and runSlack bytes more, so
// that a short run is copied as one block of that size whatever its
// length: no call and no branch on the length.
func copyRun(buf []byte, w int, s string, start, p int) int {
	if p-start <= runSlack && len(s)-start >= runSlack {
		*(*[runSlack]byte)(buf[w:]) = *(*[runSlack]byte)(unsafe.Pointer(unsafe.StringData(s[start:])))
	} else {
		copy(buf[w:], s[start:p])
	}
	return w + p - start
}

// runSlack is the size of the block cleanWhole copies a short run in.
const runSlack = 32
