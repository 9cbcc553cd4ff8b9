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

type fieldSpec struct {
	key  string
	kind kind
}

// schema is what A3 lets a line of one event keep.
type schema struct {
	fields []fieldSpec // every one, in order
	oneOf  []fieldSpec // exactly one of these (turn or question; optionIds or answer)
	tap    bool        // result always; otherwise only when not ok
	order  []string    // the keys in the order the writer writes them
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
		order:  []string{"requestId", "question", "revision", "optionIds", "answer"},
	},
	EventSend:          {fields: []fieldSpec{fRequestID, {"steer", kBool}, {"preview", kString}}, oneOf: turnOrQ, tap: true, order: []string{"requestId", "turn", "question", "steer", "preview"}},
	EventAbort:         {fields: []fieldSpec{fRequestID}, oneOf: turnOrQ, tap: true, order: []string{"requestId", "turn", "question"}},
	EventAction:        {fields: []fieldSpec{fRequestID, {"actionId", kString}, {"turn", kString}}, tap: true, order: []string{"requestId", "actionId", "turn"}},
	EventStarterStart:  {fields: []fieldSpec{{"starterId", kString}, fRequestID}, tap: true, order: []string{"starterId", "requestId"}},
	EventDurableReopen: {fields: []fieldSpec{{"conversation", kString}}, order: []string{"conversation"}},
	EventSpaceRename:   {fields: []fieldSpec{{"space", kString}, {"name", kString}}, order: []string{"space", "name"}},
	EventPaneClose:     {fields: []fieldSpec{{"conversation", kString}}, order: []string{"conversation"}},
	EventPaneRename:    {fields: []fieldSpec{{"conversation", kString}, {"name", kString}}, order: []string{"conversation", "name"}},
	EventTabRename:     {fields: []fieldSpec{{"tab", kString}, {"name", kString}}, order: []string{"tab", "name"}},
	// A device's own settings (device.go).
	EventPushSubscribe:   {fields: []fieldSpec{{"service", kString}}, order: []string{"service"}},
	EventPushUnsubscribe: {},
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
	want := map[string]kind{}
	for _, f := range sc.fields {
		want[f.key] = f.kind
	}
	var chosen []string
	for _, f := range sc.oneOf {
		want[f.key] = f.kind
	}
	result, hasReason, hasIntent := "", false, false
	at := 0 // where in the writer's order the last key was
	for _, f := range r.Fields {
		if f.Key != "count" { // coalesced refusals carry a count; its place is not pinned
			i := slices.Index(sc.order, f.Key)
			if j := slices.Index(tailOrder, f.Key); i < 0 && j >= 0 {
				i = len(sc.order) + j
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
		k, ok := want[f.Key]
		if !ok {
			return fmt.Errorf("%s lines do not keep the field %q: the audit schema does not list it for that event", r.Event, f.Key)
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
