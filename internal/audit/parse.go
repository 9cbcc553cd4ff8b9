package audit

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
// each a string, an integer, a boolean or a list of strings. It does not
// check the event's fields against A3: see CheckFields. It reads strings
// as encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD);
// FuzzParseLine holds it to that.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("it is longer than %d bytes", MaxLineBytes)
	}
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return r, errors.New("it is not a JSON object on one line")
	}
	sc := scanner{b: line, i: 1}
	var have struct{ time, session, device, event, prev bool }
	seen := make(map[string]bool, 12)
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
			if err != nil {
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
			return r, sc.invalid()
		}
		sc.space()
	}
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
	r.Hash, r.Raw = hashLine(line), line
	return r, nil
}

// scanner reads the JSON of one line: an object whose values are strings,
// whole numbers, booleans or lists of strings.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

func (s *scanner) invalid() error {
	if s.i >= len(s.b) {
		return errors.New("it is not whole JSON")
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
	return n, nil
}

// str reads a JSON string as encoding/json does.
func (s *scanner) str() (string, error) {
	if s.peek() != '"' {
		return "", s.invalid()
	}
	s.i++
	start := s.i
	for s.i < len(s.b) { // the common case: no escapes, valid UTF-8
		c := s.b[s.i]
		if c == '"' {
			if utf8.Valid(s.b[start:s.i]) {
				s.i++
				return string(s.b[start : s.i-1]), nil
			}
			break
		}
		if c == '\\' || c < 0x20 {
			break
		}
		s.i++
	}
	s.i = start
	var out []byte
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
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
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
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", s.invalid()
			}
			s.i++
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			out = utf8.AppendRune(out, r) // an invalid byte becomes U+FFFD
			s.i += size
		}
	}
	return "", s.invalid()
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

// kind is the JSON type of a field.
type kind uint8

const (
	kString kind = iota
	kInt
	kBool
	kStrings
)

func (k kind) String() string {
	return [...]string{"a string", "a number", "true or false", "a list of strings"}[k]
}

func kindOf(v any) kind {
	switch v.(type) {
	case int64:
		return kInt
	case bool:
		return kBool
	case []string:
		return kStrings
	}
	return kString
}

type fieldSpec struct {
	key  string
	kind kind
}

// schema is what A3 lets a line of one event keep.
type schema struct {
	fields []fieldSpec // every one, in order
	oneOf  []fieldSpec // exactly one of these (turn or question; optionIds or answer)
	tap    bool        // result always; otherwise only when not ok
}

var (
	fRequestID = fieldSpec{"requestId", kString}
	turnOrQ    = []fieldSpec{{"turn", kString}, {"question", kString}}
)

// Schemas of A3, by event name.
var schemas = map[string]schema{
	EventAnswer: {
		fields: []fieldSpec{fRequestID, {"question", kString}, {"revision", kInt}},
		oneOf:  []fieldSpec{{"optionIds", kStrings}, {"answer", kString}},
		tap:    true,
	},
	EventSend:          {fields: []fieldSpec{fRequestID, {"steer", kBool}, {"preview", kString}}, oneOf: turnOrQ, tap: true},
	EventAbort:         {fields: []fieldSpec{fRequestID}, oneOf: turnOrQ, tap: true},
	EventAction:        {fields: []fieldSpec{fRequestID, {"actionId", kString}, {"turn", kString}}, tap: true},
	EventStarterStart:  {fields: []fieldSpec{{"starterId", kString}, fRequestID}, tap: true},
	EventDurableReopen: {fields: []fieldSpec{{"conversation", kString}}},
	EventSpaceRename:   {fields: []fieldSpec{{"space", kString}, {"name", kString}}},
	EventPaneClose:     {fields: []fieldSpec{{"conversation", kString}}},
	EventPaneRename:    {fields: []fieldSpec{{"conversation", kString}, {"name", kString}}},
	EventTabRename:     {fields: []fieldSpec{{"tab", kString}, {"name", kString}}},
}

// Events lists every event name, in A3's order.
var Events = []string{EventAnswer, EventSend, EventAbort, EventAction, EventStarterStart,
	EventDurableReopen, EventSpaceRename, EventPaneClose, EventPaneRename, EventTabRename}

// CheckFields checks that r keeps exactly the fields A3 lists for its
// event, each of the right type, with a result where A3 gives one and a
// reason exactly when the result is not ok.
func CheckFields(r Record) error {
	sc, ok := schemas[r.Event]
	if !ok {
		return fmt.Errorf("the event %q is not one Collie records (%s)", r.Event, strings.Join(Events, ", "))
	}
	want := map[string]kind{}
	for _, f := range sc.fields {
		want[f.key] = f.kind
	}
	var chosen []string
	for _, f := range sc.oneOf {
		want[f.key] = f.kind
	}
	result, hasReason := "", false
	for _, f := range r.Fields {
		switch f.Key {
		case "result":
			s, ok := f.Value.(string)
			if !ok || s != StatusOK && s != StatusRefused && s != StatusFailed {
				return fmt.Errorf(`its result is %v, not "ok", "refused" or "failed"`, show(f.Value))
			}
			result = s
			continue
		case "reason":
			if _, ok := f.Value.(string); !ok {
				return errors.New(`its field "reason" is not a string`)
			}
			hasReason = true
			continue
		}
		k, ok := want[f.Key]
		if !ok {
			return fmt.Errorf("%s lines do not keep the field %q: A3 does not list it", r.Event, f.Key)
		}
		if got := kindOf(f.Value); got != k {
			return fmt.Errorf("its field %q is %s, not %s", f.Key, got, k)
		}
		for _, o := range sc.oneOf {
			if o.key == f.Key {
				chosen = append(chosen, f.Key)
			}
		}
	}
	for _, f := range sc.fields {
		if r.Get(f.key) == nil {
			return fmt.Errorf("%s lines keep the field %q, which this one lacks", r.Event, f.key)
		}
	}
	if len(sc.oneOf) > 0 && len(chosen) != 1 {
		return fmt.Errorf("%s lines keep exactly one of %q and %q, and this one has %d", r.Event, sc.oneOf[0].key, sc.oneOf[1].key, len(chosen))
	}
	switch {
	case sc.tap && result == "":
		return fmt.Errorf("%s lines keep a result, which this one lacks", r.Event)
	case !sc.tap && result == StatusOK:
		return fmt.Errorf("%s lines carry a result only when it was not ok", r.Event)
	case result != "" && result != StatusOK && !hasReason:
		return fmt.Errorf("a %s result has no reason", result)
	case hasReason && (result == "" || result == StatusOK):
		return errors.New("it has a reason, but nothing was refused or failed")
	}
	return nil
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
