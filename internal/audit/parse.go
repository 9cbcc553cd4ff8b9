package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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
// check the event's fields against A3: see CheckFields.
func ParseLine(line []byte) (Record, error) {
	var r Record
	if len(line) > MaxLineBytes {
		return r, fmt.Errorf("it is longer than %d bytes", MaxLineBytes)
	}
	if len(line) < 2 || line[0] != '{' || line[len(line)-1] != '}' {
		return r, errors.New("it is not a JSON object on one line")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return r, notJSON(err)
	}
	seen := make(map[string]bool, 12)
	var have struct{ time, session, device, event, prev bool }
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return r, notJSON(err)
		}
		key := tok.(string) // json.Decoder yields only strings as object keys
		if seen[key] {
			return r, fmt.Errorf("it has the field %q twice", key)
		}
		seen[key] = true
		v, err := value(dec)
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
	}
	if _, err := dec.Token(); err != nil {
		return r, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
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

func notJSON(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("it is not whole JSON")
	}
	return fmt.Errorf("it is not valid JSON (%v)", err)
}

// value reads one field's value: a string, an integer, a boolean, or a
// list of strings.
func value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, notJSON(err)
	}
	switch v := tok.(type) {
	case string, bool:
		return v, nil
	case json.Number:
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a whole number", v)
		}
		return n, nil
	case json.Delim:
		if v != '[' {
			return nil, errors.New("it is an object, which no field is")
		}
		list := []string{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, notJSON(err)
			}
			s, ok := tok.(string)
			if !ok {
				return nil, errors.New("its list holds something other than strings")
			}
			list = append(list, s)
		}
		if _, err := dec.Token(); err != nil {
			return nil, notJSON(err)
		}
		return list, nil
	}
	return nil, errors.New("it is null")
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
