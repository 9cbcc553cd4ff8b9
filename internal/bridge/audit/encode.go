package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
	"unicode/utf8"
)

// Limits on what one line keeps. A well-formed write never reaches them
// (ids are at most 128 bytes, X5; names at most 256, X4); a refused
// request may carry anything, and its line must stay short and whole.
const (
	// PreviewChars is how much of a sent text a send line keeps (A3).
	PreviewChars = 120
	idBytes      = 128 // an id (X5), the session and the device
	nameBytes    = 256 // a new name (X4's title limit)
	previewBytes = PreviewChars * utf8.UTFMax
	reasonBytes  = 256 // why a write was refused or failed
	maxOptionIDs = 16  // option ids of one answer
	// MaxLineBytes bounds a line the reader accepts. The writer's lines
	// are far shorter: every field is cut as above, and escaping at most
	// sextuples a byte.
	MaxLineBytes = 64 << 10
)

// Masked replaces every string but the ids when content is masked (A4).
const Masked = "(masked)"

// timeLayout is a line's "time": RFC 3339 in UTC, to the millisecond.
const timeLayout = "2006-01-02T15:04:05.000Z"

// Genesis is the text whose SHA-256 the first line of a log carries as
// "prev": the chain's fixed start.
const Genesis = "collie audit log v1"

// GenesisPrev is the "prev" of the first line: hex SHA-256 of Genesis.
var GenesisPrev = hashLine([]byte(Genesis))

// hashLine is the hex SHA-256 of a line's bytes, without its newline.
func hashLine(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// encoder writes one line's JSON object, field by field, in a fixed order.
type encoder struct {
	b    []byte
	mask bool    // content=none: strings other than ids become Masked (A4)
	vals []value // the event's values, room reused
}

func (e *encoder) key(k string) {
	if len(e.b) > 1 {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

// id writes an id, which masking keeps (A4).
func (e *encoder) id(k, v string) {
	e.key(k)
	e.b = appendString(e.b, cut(v, idBytes))
}

// text writes a string that masking replaces (A4), cut to limit bytes.
func (e *encoder) text(k, v string, limit int) {
	e.key(k)
	if e.mask {
		v = Masked
	}
	e.b = appendString(e.b, cut(v, limit))
}

// texts writes a list of strings that masking replaces one by one.
func (e *encoder) texts(k string, vs []string) {
	e.key(k)
	e.b = append(e.b, '[')
	for i, v := range vs[:min(len(vs), maxOptionIDs)] {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		if e.mask {
			v = Masked
		}
		e.b = appendString(e.b, cut(v, idBytes))
	}
	e.b = append(e.b, ']')
}

func (e *encoder) int(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *encoder) bool(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

// event writes ev's fields, as its schema lists them, and a coalesced
// refusal's count after them.
func (e *encoder) event(ev Event) {
	e.vals = ev.values(e.vals[:0])
	for i, f := range schemas[ev.Name()].fields {
		if i >= len(e.vals) || !e.vals[i].set {
			continue
		}
		switch v := e.vals[i]; f.kind {
		case kString:
			if f.text {
				e.text(f.key, v.s, f.limit)
			} else {
				e.id(f.key, v.s)
			}
		case kInt:
			e.int(f.key, v.n)
		case kBool:
			e.bool(f.key, v.b)
		case kStrings:
			e.texts(f.key, v.ss)
		}
	}
	if c, ok := ev.(counted); ok {
		e.int("count", c.n)
	}
}

// encodeLine is the line of ev with its own result, without its newline,
// chained to prev.
func encodeLine(buf []byte, t time.Time, who Who, ev Event, mask bool, prev string) []byte {
	return encodeLineAs(buf, t, who, ev, ev.result(), "", mask, prev)
}

// encodeLineAs is the line of ev with the result r, and after the result
// the field "intent" when intent is not "": the hash of the pending line
// this one ends (Log.Begin).
func encodeLineAs(buf []byte, t time.Time, who Who, ev Event, r Result, intent string, mask bool, prev string) []byte {
	e := encoder{b: append(buf, '{'), mask: mask}
	e.key("time")
	e.b = append(e.b, '"')
	e.b = t.UTC().AppendFormat(e.b, timeLayout)
	e.b = append(e.b, '"')
	e.id("session", who.Session)
	e.id("device", who.Device)
	e.key("event")
	e.b = appendString(e.b, ev.Name())
	e.event(ev)
	if tap(ev) || r.status != StatusOK && r.status != "" {
		e.key("result")
		e.b = appendString(e.b, r.status)
		if r.status != StatusOK && r.status != StatusPending {
			e.text("reason", r.reason, reasonBytes)
		}
	}
	if intent != "" {
		e.key("intent")
		e.b = append(e.b, '"')
		e.b = append(e.b, intent...)
		e.b = append(e.b, '"')
	}
	e.key("prev")
	e.b = append(e.b, '"')
	e.b = append(e.b, prev...)
	e.b = append(e.b, '"', '}')
	return e.b
}

// preview is the first PreviewChars characters of s (A3).
func preview(s string) string {
	n := 0
	for i := range s {
		if n == PreviewChars {
			return s[:i]
		}
		n++
	}
	return s
}

// cut shortens s to at most limit bytes at a whole character, ending with
// "…" when it had to cut.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	end := 0
	for i := range s {
		if i > limit-len(ellipsis) {
			break
		}
		end = i
	}
	return s[:end] + ellipsis
}

// appendString appends s as a JSON string. Besides what JSON needs, it
// writes as \u escapes every character that could hide or reorder text
// on a terminal: C0 and C1 controls, DEL, the line and paragraph
// separators, and X2's invisible and direction characters, so that
// reading the file with cat or less shows what is there. Invalid UTF-8
// becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\t':
				b = append(b, '\\', 't')
			case '\r':
				b = append(b, '\\', 'r')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if !hidden(r) {
			i += size
			continue
		}
		b = append(b, s[start:i]...)
		b = appendEscape(b, r)
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscape writes r as \uXXXX, or a surrogate pair above U+FFFF.
func appendEscape(b []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		b = appendU(b, 0xd800+(r>>10))
		return appendU(b, 0xdc00+(r&0x3ff))
	}
	return appendU(b, r)
}

func appendU(b []byte, r rune) []byte {
	const hexDigits = "0123456789abcdef"
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// hidden reports whether r, above ASCII, is a control character or one
// that X2 counts invisible or direction-changing, or a line separator.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f, // C1
		r == 0x061c,
		r >= 0x200b && r <= 0x200f,
		r >= 0x2028 && r <= 0x202e,
		r == 0x2060,
		r >= 0x2066 && r <= 0x2069,
		r == 0xfeff,
		r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}
