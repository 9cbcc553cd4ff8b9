package audit

import (
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestWriteEventsAreTheRegistry: the table of write events has a row for
// exactly the writes of the protocol's registry, so a write added to the
// registry without its audit event (or an event left for a write that is
// gone) fails here; each row's event, from a request and from none, has a
// schema and writes a line CheckFields takes (A3).
func TestWriteEventsAreTheRegistry(t *testing.T) {
	var names []string
	for _, w := range wire.Writes() {
		names = append(names, w.Name)
		for _, req := range []wire.WriteRequest{nil, w.New()} {
			ev, err := EventOf(w.Name, req, OK)
			if err != nil {
				t.Errorf("%s (request %T): %v", w.Name, req, err)
				continue
			}
			if _, ok := schemas[ev.Name()]; !ok {
				t.Errorf("%s: event %q has no schema", w.Name, ev.Name())
			}
			checkLine(t, ev)
		}
	}
	var rows []string
	for name := range writeEvents {
		rows = append(rows, name)
	}
	sort.Strings(names)
	sort.Strings(rows)
	if !slices.Equal(rows, names) {
		t.Errorf("the audit log makes events for the writes %v; the registry has %v", rows, names)
	}
	renames := map[string]*wire.RenameRequest{
		EventSpaceRename: {Space: "s", Title: "T"},
		EventTabRename:   {Tab: "t", Title: "T"},
		EventPaneRename:  {Conversation: "c", Title: "T"},
	}
	for want, req := range renames {
		if ev, err := EventOf(wire.RenameWrite, req, OK); err != nil || ev.Name() != want {
			t.Errorf("A3 rename %+v: %v, %v; want %s", req, ev, err, want)
		}
	}
	type wrapped struct{ *wire.SendRequest }
	bad := []struct {
		name string
		req  wire.WriteRequest
	}{
		{"nope", nil},
		{"", &wire.SendRequest{}},
		{"Send", &wire.SendRequest{}},
		{"starter.start", nil},
		{wire.AnswerWrite, &wire.SendRequest{}},        // another write's request
		{wire.SendWrite, wrapped{&wire.SendRequest{}}}, // not the registry's type
		{EventPushSubscribe, &wire.SendRequest{}},      // a device's setting has no request
	}
	for _, b := range bad {
		if ev, err := EventOf(b.name, b.req, OK); !errors.Is(err, wire.ErrUnknownWrite) || ev != nil {
			t.Errorf("EventOf(%q, %T) = %v, %v; want no event and ErrUnknownWrite", b.name, b.req, ev, err)
		}
	}
}

// TestSchemasAreTheEvents: the schema table has a row for exactly the
// events Collie records (Events, which collie audit --event offers), and
// every event's values match its row: one for each field, of the field's
// kind, none only for an alternative, so the writer and CheckFields read
// one description of each line (A3).
func TestSchemasAreTheEvents(t *testing.T) {
	var rows []string
	for name := range schemas {
		rows = append(rows, name)
	}
	events := slices.Clone(Events)
	sort.Strings(rows)
	sort.Strings(events)
	if !slices.Equal(rows, events) {
		t.Errorf("the schemas describe %v; the events are %v", rows, events)
	}
	seen := map[string]bool{}
	for _, c := range eventCases {
		ev := c.ev
		seen[ev.Name()] = true
		sc := schemas[ev.Name()]
		vals := ev.values(nil)
		if len(vals) != len(sc.fields) {
			t.Errorf("%s: %d values for the %d fields of its schema", c.name, len(vals), len(sc.fields))
			continue
		}
		for i, f := range sc.fields {
			if !vals[i].set {
				if !f.alt {
					t.Errorf("%s: no value for the field %q", c.name, f.key)
				}
				continue
			}
			if k := vals[i].kind; k != f.kind {
				t.Errorf("%s: the field %q is %s, its schema says %s", c.name, f.key, k, f.kind)
			}
		}
		checkLine(t, ev)
	}
	for _, name := range Events {
		if !seen[name] {
			t.Errorf("no case of eventCases is a %s event", name)
		}
	}
}

// checkLine encodes ev's line and holds it to CheckFields.
func checkLine(t *testing.T, ev Event) {
	t.Helper()
	line := encodeLine(nil, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), who, ev, false, GenesisPrev)
	r, err := ParseLine(line)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if err := CheckFields(r); err != nil {
		t.Errorf("%s: %v", line, err)
	}
}
