package audit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Record is one line of the log, parsed.
type Record struct {
	Time    time.Time
	Session string
	Device  string
	Event   string
	// Fields are the event's fields in the order of the line, result and
	// reason included. A value is a string, an int64, a bool or a []string.
	Fields []Field
	Prev   string // hex SHA-256 of the line before
	Hash   string // hex SHA-256 of this line
	Raw    []byte // the line as it is in the file, without its newline
}

// Field is one of an event's fields.
type Field struct {
	Key   string
	Value any
}

// Get is the value of the field key, or nil.
func (r Record) Get(key string) any {
	for _, f := range r.Fields {
		if f.Key == key {
			return f.Value
		}
	}
	return nil
}

// Result is the record's "result", or "ok" for an event whose line has
// none (A3 gives one only to the five taps; the others carry it only when
// they were not ok).
func (r Record) Result() string {
	if s, ok := r.Get("result").(string); ok {
		return s
	}
	return StatusOK
}

// ParseLine parses one line, without its newline: a JSON object of the
// fields time, session, device, event and prev, and the event's fields,
// each a string, an integer, a boolean or a list of strings. It accepts a
// line only as Collie writes it: keys exactly as written (no other case),
// each once, no whitespace, time, session, device and event first and prev
// last, strings escaped exactly as appendString escapes them, numbers and
// the time in their one canonical form. Anything else is not a record, so
// a line that was reformatted, had a CR or a space added, or a key in
// another case, is named by Verify rather than read some other way. It
// does not check the event's fields against A3: see CheckFields.
// FuzzParseLine holds it to encoding/json: what it accepts, encoding/json
// reads the same, and it never calls valid JSON invalid.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("it is longer than %d bytes", MaxLineBytes)
	}
	if len(line) < 2 || line[0] != '{' {
		return r, errors.New("it is not a JSON object on one line")
	}
	sc := scanner{b: line, i: 1}
	var have struct{ time, session, device, event, prev bool }
	seen := make(map[string]bool, 12)
	n := 0 // keys read
	sc.space()
	for first := true; ; first = false {
		if sc.peek() == '}' && first {
			sc.i++
			break
		}
		key, err := sc.str()
		if err != nil {
			return r, err
		}
		if seen[key] {
			return r, fmt.Errorf("it has the field %q twice", key)
		}
		seen[key] = true
		if n < len(headKeys) && key != headKeys[n] || have.prev {
			sc.noncanon("a field out of Collie's order (time, session, device, event, the event's fields, prev)")
		}
		n++
		sc.space()
		if sc.peek() != ':' {
			return r, sc.invalid()
		}
		sc.i++
		sc.space()
		v, err := sc.value()
		if err != nil {
			return r, fmt.Errorf("the field %q: %w", key, err)
		}
		s, isString := v.(string)
		switch key {
		case "time", "session", "device", "event", "prev":
			if !isString {
				return r, fmt.Errorf("the field %q is not a string", key)
			}
		}
		switch key {
		case "time":
			t, err := time.Parse(timeLayout, s)
			if err != nil || t.Format(timeLayout) != s {
				return r, fmt.Errorf("the time %q is not RFC 3339 in UTC to the millisecond", s)
			}
			r.Time, have.time = t, true
		case "session":
			r.Session, have.session = s, true
		case "device":
			r.Device, have.device = s, true
		case "event":
			r.Event, have.event = s, true
		case "prev":
			if !isHash(s) {
				return r, errors.New(`the field "prev" is not a hex SHA-256`)
			}
			r.Prev, have.prev = s, true
		default:
			r.Fields = append(r.Fields, Field{key, v})
		}
		sc.space()
		c := sc.peek()
		sc.i++
		if c == '}' {
			break
		}
		if c != ',' {
			sc.i--
			return r, sc.invalid()
		}
		sc.space()
	}
	sc.space()
	if sc.i != len(line) {
		return r, errors.New("it has more after its JSON object")
	}
	for _, f := range []struct {
		name string
		ok   bool
	}{{"time", have.time}, {"session", have.session}, {"device", have.device}, {"event", have.event}, {"prev", have.prev}} {
		if !f.ok {
			return r, fmt.Errorf("it has no %q field", f.name)
		}
	}
	if sc.loose != "" {
		return r, fmt.Errorf("it is not written the way Collie writes a line: %s at byte %d", sc.loose, sc.looseAt+1)
	}
	r.Hash, r.Raw = hashLine(line), line
	return r, nil
}

// headKeys are the keys every line starts with, in this order.
var headKeys = [...]string{"time", "session", "device", "event"}

// scanner reads the JSON of one line: an object whose values are strings,
// whole numbers, booleans or lists of strings.
type scanner struct {
	b []byte
	i int
	// loose is the first thing found that is valid JSON but not what
	// Collie writes, and looseAt its offset.
	loose   string
	looseAt int
}

// noncanon notes the first thing that is valid JSON but not as Collie
// writes it.
func (s *scanner) noncanon(what string) {
	if s.loose == "" {
		s.loose, s.looseAt = what, s.i
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// space skips JSON whitespace, which Collie never writes: it notes it.
func (s *scanner) space() {
	if s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.noncanon("whitespace (a space, tab, CR or LF)")
	}
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

// errNotWhole is the error of a line that ends before its JSON does: a
// write cut short looks like this.
var errNotWhole = errors.New("it is not whole JSON")

func (s *scanner) invalid() error {
	if s.i >= len(s.b) {
		return errNotWhole
	}
	return fmt.Errorf("it is not valid JSON (at byte %d)", s.i+1)
}

// value reads a string, a whole number, true or false, or a list of
// strings.
func (s *scanner) value() (any, error) {
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == 't' || c == 'f' || c == 'n':
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				if lit == "null" {
					return nil, errors.New("it is null")
				}
				return lit == "true", nil
			}
		}
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == '[':
		s.i++
		list := []string{}
		s.space()
		if s.peek() == ']' {
			s.i++
			return list, nil
		}
		for {
			s.space()
			if s.peek() != '"' {
				if _, err := s.value(); err != nil {
					return nil, err
				}
				return nil, errors.New("its list holds something other than strings")
			}
			v, err := s.str()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
			s.space()
			c := s.peek()
			s.i++
			if c == ']' {
				return list, nil
			}
			if c != ',' {
				s.i--
				return nil, s.invalid()
			}
		}
	case c == '{':
		return nil, errors.New("it is an object, which no field is")
	}
	return nil, s.invalid()
}

// number reads a JSON number, which must be a whole one that fits an
// int64.
func (s *scanner) number() (any, error) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.peek() == '-' {
		s.i++
	}
	if s.peek() == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, s.invalid()
	}
	whole := true
	if s.peek() == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.invalid()
		}
		whole = false
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if digits() == 0 {
			return nil, s.invalid()
		}
		whole = false
	}
	text := string(s.b[start:s.i])
	n, err := strconv.ParseInt(text, 10, 64)
	if !whole || err != nil {
		return nil, fmt.Errorf("%s is not a whole number", text)
	}
	if text != strconv.FormatInt(n, 10) {
		end := s.i
		s.i = start
		s.noncanon("a number not in its plain form")
		s.i = end
	}
	return n, nil
}

// str reads a JSON string as encoding/json does (invalid UTF-8 and lone
// surrogates become U+FFFD), and notes anything appendString would have
// written otherwise: a raw DEL, invisible, direction or C1 character or
// invalid UTF-8, and an escape other than the ones it writes (\" \\ \n
// \r \t, and lower-case \u escapes of exactly the characters it escapes
// and of U+FFFD).
func (s *scanner) str() (string, error) {
	if s.peek() != '"' {
		return "", s.invalid()
	}
	s.i++
	start := s.i
	for s.i < len(s.b) { // the common case: printable ASCII, no escapes
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return string(s.b[start : s.i-1]), nil
		}
		if c == '\\' || c < 0x20 || c >= 0x7f {
			break
		}
		s.i++
	}
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(out), nil
		case c < 0x20:
			return "", s.invalid()
		case c == '\\':
			s.i++
			switch e := s.peek(); e {
			case '"', '\\':
				out = append(out, e)
			case '/', 'b', 'f':
				s.noncanon(`an escape Collie does not write (\/, \b or \f)`)
				out = append(out, map[byte]byte{'/': '/', 'b': '\b', 'f': '\f'}[e])
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := s.hex4(s.i + 1)
				if !ok {
					return "", s.invalid()
				}
				at := s.i
				s.i += 4
				if utf16.IsSurrogate(r) {
					if r2, ok := s.hex4(s.i + 3); ok && s.b[s.i+1] == '\\' && s.b[s.i+2] == 'u' {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							s.i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
					if r == utf8.RuneError {
						s.i = at
						s.noncanon("a lone surrogate escape")
						s.i = at + 4
					}
				}
				if !escaped(r) || bytes.ContainsAny(s.b[at+1:s.i+1], "ABCDEF") {
					i := s.i
					s.i = at
					s.noncanon(`a \u escape Collie does not write`)
					s.i = i
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", s.invalid()
			}
			s.i++
		case c < utf8.RuneSelf:
			if c == 0x7f {
				s.noncanon("a raw DEL character")
			}
			out = append(out, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			switch {
			case r == utf8.RuneError && size == 1:
				s.noncanon("invalid UTF-8")
			case hidden(r):
				s.noncanon(fmt.Sprintf("a raw %U character, which Collie escapes", r))
			}
			out = utf8.AppendRune(out, r) // an invalid byte becomes U+FFFD
			s.i += size
		}
	}
	return "", s.invalid()
}

// escaped reports whether appendString writes r as a \u escape: C0
// controls but \n, \r and \t, DEL, the hidden characters, and U+FFFD,
// which it writes for invalid UTF-8.
func escaped(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\n' && r != '\r' && r != '\t'
	case r == 0x7f, r == utf8.RuneError:
		return true
	}
	return hidden(r)
}

// hex4 reads the four hex digits at b[at:].
func (s *scanner) hex4(at int) (rune, bool) {
	if at+4 > len(s.b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s.b[at:at+4]), 16, 16)
	return rune(n), err == nil
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
