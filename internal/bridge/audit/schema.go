package audit

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

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

// field is one field a line of an event keeps (A3).
type field struct {
	key   string
	kind  kind
	text  bool // words, which masking replaces (A4); otherwise an id, kept
	limit int  // the most bytes kept (of each string of a list)
	alt   bool // an alternative: a line keeps exactly one of its event's
}

func id(key string) field { return field{key: key, kind: kString, limit: idBytes} }
func text(key string, limit int) field {
	return field{key: key, kind: kString, text: true, limit: limit}
}
func number(key string) field  { return field{key: key, kind: kInt} }
func boolean(key string) field { return field{key: key, kind: kBool} }
func list(key string) field    { return field{key: key, kind: kStrings, text: true, limit: idBytes} }

// value is the value of one field, of its kind; the zero value is none,
// the alternative not taken.
type value struct {
	set  bool
	kind kind
	s    string
	n    int64
	b    bool
	ss   []string
}

func str(s string) value     { return value{set: true, kind: kString, s: s} }
func num(n int64) value      { return value{set: true, kind: kInt, n: n} }
func truth(b bool) value     { return value{set: true, kind: kBool, b: b} }
func strs(ss []string) value { return value{set: true, kind: kStrings, ss: ss} }

// or is f as one of its event's alternatives.
func (f field) or() field { f.alt = true; return f }

// schema is what A3 lets a line of one event keep: its fields, in the
// order the writer writes them (each event's values follow it), and
// whether it is one of A6's five taps, whose line always has a result and
// whose receipt is filed under its requestId; another event's line has a
// result only when it was not ok.
type schema struct {
	fields []field
	tap    bool
}

// schemas is the audit log's format, one row per event: what the writer
// writes (encoder.event) and what the reader lets a line keep
// (CheckFields).
var schemas = map[string]schema{
	EventAnswer: {tap: true, fields: []field{id("requestId"), id("question"), number("revision"),
		list("optionIds").or(), text("answer", idBytes).or()}},
	EventSend: {tap: true, fields: []field{id("requestId"), id("turn").or(), id("question").or(),
		boolean("steer"), text("preview", previewBytes)}},
	EventAbort:         {tap: true, fields: []field{id("requestId"), id("turn").or(), id("question").or()}},
	EventAction:        {tap: true, fields: []field{id("requestId"), id("actionId"), id("turn")}},
	EventStarterStart:  {tap: true, fields: []field{id("starterId"), id("requestId")}},
	EventDurableReopen: {fields: []field{id("conversation")}},
	EventSpaceRename:   {fields: []field{id("space"), text("name", nameBytes)}},
	EventPaneClose:     {fields: []field{id("conversation")}},
	EventPaneRename:    {fields: []field{id("conversation"), text("name", nameBytes)}},
	EventTabRename:     {fields: []field{id("tab"), text("name", nameBytes)}},
	// A device's own settings (device.go).
	EventPushSubscribe:   {fields: []field{id("service")}},
	EventPushUnsubscribe: {},
}

// tap reports whether ev is one of A6's five taps (its schema's).
func tap(ev Event) bool { return schemas[ev.Name()].tap }

// requestID is the request id a tap's receipt is filed under: its
// requestId field; "" for an event without a receipt.
func requestID(ev Event) string {
	sc := schemas[ev.Name()]
	if !sc.tap {
		return ""
	}
	var buf [8]value
	vals := ev.values(buf[:0])
	for i, f := range sc.fields {
		if f.key == "requestId" && i < len(vals) {
			return vals[i].s
		}
	}
	return ""
}

// Events lists every event name, in A3's order.
var Events = []string{EventAnswer, EventSend, EventAbort, EventAction, EventStarterStart,
	EventDurableReopen, EventSpaceRename, EventPaneClose, EventPaneRename, EventTabRename,
	EventPushSubscribe, EventPushUnsubscribe}

// tailOrder is the order of the fields after an event's own.
var tailOrder = []string{"result", "reason", "intent"}

// CheckFields checks that r keeps exactly the fields A3 lists for its
// event, each of the right type, with a result where A3 gives one and a
// reason exactly when the result is not ok.
func CheckFields(r Record) error {
	sc, ok := schemas[r.Event]
	if !ok {
		return fmt.Errorf("the event %q is not one Collie records (%s)", r.Event, strings.Join(Events, ", "))
	}
	want := map[string]field{}
	var order, alts []string
	for _, f := range sc.fields {
		want[f.key] = f
		order = append(order, f.key)
		if f.alt {
			alts = append(alts, f.key)
		}
	}
	var chosen []string
	result, hasReason, hasIntent := "", false, false
	at := 0 // where in the writer's order the last key was
	for _, f := range r.Fields {
		if f.Key != "count" { // coalesced refusals carry a count; its place is not pinned
			i := slices.Index(order, f.Key)
			if j := slices.Index(tailOrder, f.Key); i < 0 && j >= 0 {
				i = len(order) + j
			}
			if i >= 0 && i < at {
				return fmt.Errorf("its field %q is out of the order Collie writes", f.Key)
			}
			at = max(at, i)
		}
		switch f.Key {
		case "result":
			s, ok := f.Value.(string)
			if !ok || s != StatusOK && s != StatusRefused && s != StatusFailed && s != StatusPending {
				return fmt.Errorf(`its result is %v, not "ok", "refused", "failed" or "pending"`, show(f.Value))
			}
			result = s
			continue
		case "reason":
			if _, ok := f.Value.(string); !ok {
				return errors.New(`its field "reason" is not a string`)
			}
			hasReason = true
			continue
		case "intent":
			if s, ok := f.Value.(string); !ok || !isHash(s) {
				return errors.New(`its field "intent" is not a hex SHA-256`)
			}
			hasIntent = true
			continue
		case "count":
			if n, ok := f.Value.(int64); !ok || n < 1 {
				return errors.New(`its field "count" is not a whole number of at least 1`)
			}
			continue
		}
		sf, ok := want[f.Key]
		if !ok {
			return fmt.Errorf("%s lines do not keep the field %q: the audit schema does not list it for that event", r.Event, f.Key)
		}
		if got := kindOf(f.Value); got != sf.kind {
			return fmt.Errorf("its field %q is %s, not %s", f.Key, got, sf.kind)
		}
		if sf.alt {
			chosen = append(chosen, f.Key)
		}
	}
	for _, f := range sc.fields {
		if !f.alt && r.Get(f.key) == nil {
			return fmt.Errorf("%s lines keep the field %q, which this one lacks", r.Event, f.key)
		}
	}
	if len(alts) > 0 && len(chosen) != 1 {
		return fmt.Errorf("%s lines keep exactly one of %q and %q, and this one has %d", r.Event, alts[0], alts[1], len(chosen))
	}
	switch {
	case sc.tap && result == "":
		return fmt.Errorf("%s lines keep a result, which this one lacks", r.Event)
	case !sc.tap && result == StatusOK:
		return fmt.Errorf("%s lines carry a result only when it was not ok", r.Event)
	case result == StatusPending && (hasReason || hasIntent):
		return errors.New("a pending line (a write begun) has a reason or an intent")
	case result != "" && result != StatusOK && result != StatusPending && !hasReason:
		return fmt.Errorf("a %s result has no reason", result)
	case hasReason && (result == "" || result == StatusOK):
		return errors.New("it has a reason, but nothing was refused or failed")
	case r.Get("count") != nil && result != StatusRefused && result != StatusFailed:
		return errors.New("it has a count, but nothing was refused or failed")
	}
	return nil
}

func show(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
