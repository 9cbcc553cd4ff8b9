package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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
//
// It decodes the line with jsontext (a name given twice is refused),
// encodes the record it holds again as the writer does (appendRecord) and
// compares the bytes: the canonical form by construction, and at the
// first byte that differs it says what the writer would have written
// otherwise. FuzzParseLine holds it to encoding/json: what it accepts,
// encoding/json reads the same, and it never calls valid JSON invalid.
func ParseLine(line []byte) (Record, error) {
	var lr lineReader
	return lr.parse(line)
}

// lineReader is ParseLine with its decoder and buffers kept from one line
// to the next, for a reader of many lines (verify): a fresh decoder a
// line doubled the cost of verify.
type lineReader struct {
	d    jsontext.Decoder
	in   bytes.Buffer // the decoder reads a bytes.Buffer's bytes in place
	want []byte       // the writer's form of the last line
}

func (lr *lineReader) parse(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("it is longer than %d bytes", MaxLineBytes)
	}
	if len(line) < 2 || line[0] != '{' {
		return r, errors.New("it is not a JSON object on one line")
	}
	// Invalid UTF-8 and lone surrogate escapes become U+FFFD here, which
	// the writer writes as \ufffd: the comparison below names them.
	lr.in = *bytes.NewBuffer(line)
	d := &lr.d
	d.Reset(&lr.in, jsontext.AllowInvalidUTF8(true))
	if _, err := d.ReadToken(); err != nil {
		return r, syntaxError(err)
	}
	var have struct{ time, session, device, event, prev bool }
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return r, syntaxError(err)
		}
		key := tok.String()
		v, err := readValue(d)
		if err != nil {
			return r, fmt.Errorf("the field %q: %w", key, syntaxError(err))
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
	}
	if _, err := d.ReadToken(); err != nil { // '}'
		return r, syntaxError(err)
	}
	end := int(d.InputOffset())
	if len(bytes.TrimLeft(line[end:], " \t\r\n")) > 0 {
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
	lr.want = appendRecord(lr.want[:0], r)
	if at := firstDiff(line, lr.want); at >= 0 {
		return r, fmt.Errorf("it is not written the way Collie writes a line: %s at byte %d", noncanonical(line, at), at+1)
	}
	r.Hash, r.Raw = hashLine(line), line
	return r, nil
}

// readValue reads a string, a whole number, true or false, or a list of
// strings.
func readValue(d *jsontext.Decoder) (any, error) {
	switch d.PeekKind() {
	case '"', 't', 'f':
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '"' {
			return tok.String(), nil
		}
		return tok.Bool(), nil
	case '0':
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a whole number", v)
		}
		return n, nil
	case '[':
		d.ReadToken()
		list := []string{}
		for {
			switch d.PeekKind() {
			case ']':
				d.ReadToken()
				return list, nil
			case '"':
				tok, err := d.ReadToken()
				if err != nil {
					return nil, err
				}
				list = append(list, tok.String())
				continue
			}
			if _, err := readValue(d); err != nil {
				return nil, err
			}
			return nil, errors.New("its list holds something other than strings")
		}
	case 'n':
		if _, err := d.ReadValue(); err != nil {
			return nil, err
		}
		return nil, errors.New("it is null")
	case '{':
		return nil, errors.New("it is an object, which no field is")
	}
	_, err := d.ReadToken()
	if err == nil {
		err = errors.New("it is not a value")
	}
	return nil, err
}

// errNotWhole is the error of a line that ends before its JSON does: a
// write cut short looks like this.
var errNotWhole = errors.New("it is not whole JSON")

// syntaxError words an error of the decoder.
func syntaxError(err error) error {
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errNotWhole
	case errors.Is(err, jsontext.ErrDuplicateName) && errors.As(err, &se):
		return fmt.Errorf("it has the field %q twice", se.JSONPointer.LastToken())
	case errors.As(err, &se):
		return fmt.Errorf("it is not valid JSON (at byte %d)", se.ByteOffset+1)
	}
	return err
}

// appendRecord is r as the writer writes it: time, session, device,
// event, the fields in their order, prev.
func appendRecord(b []byte, r Record) []byte {
	b = append(b, `{"time":"`...)
	b = r.Time.UTC().AppendFormat(b, timeLayout)
	b = append(b, `","session":`...)
	b = appendString(b, r.Session)
	b = append(b, `,"device":`...)
	b = appendString(b, r.Device)
	b = append(b, `,"event":`...)
	b = appendString(b, r.Event)
	for _, f := range r.Fields {
		b = append(b, ',')
		b = appendString(b, f.Key)
		b = append(b, ':')
		switch v := f.Value.(type) {
		case string:
			b = appendString(b, v)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case bool:
			b = strconv.AppendBool(b, v)
		case []string:
			b = append(b, '[')
			for i, s := range v {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendString(b, s)
			}
			b = append(b, ']')
		}
	}
	b = append(b, `,"prev":"`...)
	b = append(b, r.Prev...)
	return append(b, '"', '}')
}

// firstDiff is the offset of the first byte where line is not want, the
// writer's form of what it holds, or -1 when they are the same. The one
// thing read two ways is U+FFFD: the writer writes a real one as it is
// and invalid UTF-8 as \ufffd, and both read back as U+FFFD.
func firstDiff(line, want []byte) int {
	i, j := 0, 0
	for i < len(line) && j < len(want) {
		switch {
		case line[i] == want[j]:
			i, j = i+1, j+1
		case bytes.HasPrefix(line[i:], []byte(`\ufffd`)) && bytes.HasPrefix(want[j:], []byte("\ufffd")):
			i, j = i+len(`\ufffd`), j+len("\ufffd")
		default:
			return runeStart(i, j, want)
		}
	}
	if i == len(line) && j == len(want) {
		return -1
	}
	return runeStart(i, j, want)
}

// runeStart moves a difference found at line[i], want[j] back to the start
// of want's character there: the line may share the first bytes of it
// and then hold invalid UTF-8.
func runeStart(i, j int, want []byte) int {
	for j > 0 && j < len(want) && !utf8.RuneStart(want[j]) {
		i, j = i-1, j-1
	}
	return i
}

// noncanonical says what, at line[at], the writer would have written
// otherwise. Up to at the line is the writer's, so its JSON there is read
// the same way in both.
func noncanonical(line []byte, at int) string {
	inString := false
	for i := 0; i < at; i++ {
		switch c := line[i]; {
		case c == '"':
			inString = !inString
		case inString && c == '\\':
			n := 2
			if line[i+1] == 'u' {
				n = 6
			}
			if at < i+n {
				return escapeProblem(line[i:])
			}
			i += n - 1
		}
	}
	if at >= len(line) {
		return orderProblem
	}
	if !inString {
		switch line[at] {
		case ' ', '\t', '\r', '\n':
			return "whitespace (a space, tab, CR or LF)"
		case '-':
			return "a number not in its plain form"
		}
		return orderProblem
	}
	switch r, size := utf8.DecodeRune(line[at:]); {
	case line[at] == '\\':
		return escapeProblem(line[at:])
	case r == 0x7f:
		return "a raw DEL character"
	case r == utf8.RuneError && size == 1:
		return "invalid UTF-8"
	case hidden(r):
		return fmt.Sprintf("a raw %U character, which Collie escapes", r)
	}
	return orderProblem
}

const orderProblem = "a field out of Collie's order (time, session, device, event, the event's fields, prev)"

// escapeProblem names an escape, esc[0] == '\\', that the writer would
// not have written.
func escapeProblem(esc []byte) string {
	if esc[1] != 'u' {
		return `an escape Collie does not write (\/, \b or \f)`
	}
	if r := hex4(esc[2:]); utf16.IsSurrogate(r) {
		if len(esc) < 12 || esc[6] != '\\' || esc[7] != 'u' || utf16.DecodeRune(r, hex4(esc[8:])) == utf8.RuneError {
			return "a lone surrogate escape"
		}
	}
	return `a \u escape Collie does not write`
}

// hex4 is the rune of the four hex digits that b starts with, which the
// decoder has checked.
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n)
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
