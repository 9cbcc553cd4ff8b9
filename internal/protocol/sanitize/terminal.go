package sanitize

import (
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text bound for a terminal.
//
// X2 cleans agent text on arrival; the functions below clean it again on
// the way out of the collie command, so that no control character reaches
// a terminal even if some path forgot the first cleaning (X1, defence in
// depth). They are stricter than X2: besides C0, DEL, C1 and the invisible
// characters of step 2, they remove every other Unicode format character
// (category Cf, such as U+00AD or U+2061–U+2064) and the line and
// paragraph separators U+2028 and U+2029. They never cut.

// Terminal cleans s for a terminal, keeping '\n' and '\t'.
func Terminal(s string) string { return terminal(s, layout) }

// TerminalLine cleans s for one line of a terminal: '\n' and '\t' go too.
func TerminalLine(s string) string { return terminal(s, 0) }

// termDrops reports whether r, a valid non-ASCII character, never
// reaches a terminal.
func termDrops(r rune) bool {
	return isControl(r) || isInvisible(r) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// termPrefix is the length of the longest prefix of s that terminal
// leaves as it is.
func termPrefix(s string, keep uint32) int {
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
		if n == 1 || termDrops(r) {
			return i
		}
		i += n
	}
	return i
}

func terminal(s string, keep uint32) string {
	i := termPrefix(s, keep)
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		b.WriteString(s[:i])
		s = s[i:]
		if s == "" {
			return b.String()
		}
		n, repl := dirt(s)
		b.WriteString(repl)
		s = s[n:]
		i = termPrefix(s, keep)
	}
}

// TerminalJSON makes encoded JSON safe for a terminal without changing
// what it means: every character [Terminal] would remove, and DEL, which
// encoding/json leaves as it is, is written as a \u escape. Such
// characters can only stand inside a JSON string, where the escape decodes
// to the same character. encoding/json already escapes C0 and replaces
// invalid UTF-8; invalid bytes met here become \ufffd.
func TerminalJSON(b []byte) []byte {
	s := string(b)
	i := termPrefix(s, layout)
	if i == len(s) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for {
		out = append(out, s[:i]...)
		s = s[i:]
		if s == "" {
			return out
		}
		r, n := utf8.DecodeRuneInString(s)
		if r == utf8.RuneError && n == 1 {
			n, _ = dirt(s)
		}
		out = appendJSONEscape(out, r)
		s = s[n:]
		i = termPrefix(s, layout)
	}
}

// appendJSONEscape appends r as a JSON \u escape, as a surrogate pair
// above U+FFFF.
func appendJSONEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	u := func(v rune) {
		out = append(out, '\\', 'u', hex[v>>12&0xF], hex[v>>8&0xF], hex[v>>4&0xF], hex[v&0xF])
	}
	if r > 0xFFFF {
		r -= 0x10000
		u(0xD800 + r>>10)
		u(0xDC00 + r&0x3FF)
	} else {
		u(r)
	}
	return out
}

// TerminalWriter passes what is written to it through [Terminal]. A character split across two writes is
// held back until it is whole; Flush writes what is held.
type TerminalWriter struct {
	w       io.Writer
	pending []byte
}

// NewTerminalWriter returns a TerminalWriter writing to w.
func NewTerminalWriter(w io.Writer) *TerminalWriter { return &TerminalWriter{w: w} }

// Write cleans p and writes it. It reports len(p) written unless the
// underlying writer fails.
func (t *TerminalWriter) Write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	// Hold back an unfinished character at the end: at most 3 bytes.
	cut := len(buf)
	for k := 1; k <= utf8.UTFMax-1 && k <= len(buf); k++ {
		c := buf[len(buf)-k]
		if c < utf8.RuneSelf {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-k:]) {
				cut = len(buf) - k
			}
			break
		}
	}
	t.pending = append(t.pending[:0:0], buf[cut:]...)
	if err := t.emit(buf[:cut]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back, unfinished character as U+FFFD.
func (t *TerminalWriter) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	p := t.pending
	t.pending = nil
	return t.emit(p)
}

func (t *TerminalWriter) emit(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	_, err := t.w.Write([]byte(Terminal(string(p))))
	return err
}
