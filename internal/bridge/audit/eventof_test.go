package audit

import (
	"errors"
	"slices"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestEventOfRegistry: every write of the protocol's registry has its A3
// event, one of the row's events, whether its request was read or not;
// a name outside the registry, or a request of another write's type, is
// an error and never recorded as some other write (A3).
func TestEventOfRegistry(t *testing.T) {
	for _, w := range wire.Writes() {
		for _, req := range []wire.Request{nil, w.New()} {
			ev, err := EventOf(w.Name, req, OK)
			if err != nil {
				t.Errorf("%s (request %T): %v", w.Name, req, err)
				continue
			}
			if !slices.Contains(w.Events, ev.Name()) {
				t.Errorf("%s: event %q, not one of the row's %v", w.Name, ev.Name(), w.Events)
			}
		}
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
		req  wire.Request
	}{
		{"nope", nil},
		{"", &wire.SendRequest{}},
		{"Send", &wire.SendRequest{}},
		{"starter.start", nil},
		{wire.AnswerWrite, &wire.SendRequest{}},        // another write's request
		{wire.SendWrite, wrapped{&wire.SendRequest{}}}, // not the registry's type
		{wire.SendWrite, &wire.AskRequest{}},           // not a write
	}
	for _, b := range bad {
		if ev, err := EventOf(b.name, b.req, OK); !errors.Is(err, wire.ErrUnknownWrite) || ev != nil {
			t.Errorf("EventOf(%q, %T) = %v, %v; want no event and ErrUnknownWrite", b.name, b.req, ev, err)
		}
	}
}
