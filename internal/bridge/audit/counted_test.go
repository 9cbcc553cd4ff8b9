package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestCounted: a coalesced refusal's line carries "count" after the
// event's fields, and parses and checks as an A3 line; a single refusal,
// or a write that went through, carries none (A1).
func TestCounted(t *testing.T) {
	send := wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hi"}
	tests := []struct {
		name  string
		ev    Event
		count string // "" for none
	}{
		{"A1_refused_37", Counted(SendOf(send, Refused("cross-site")), 37), `"count":37`},
		{"A1_refused_once", Counted(SendOf(send, Refused("cross-site")), 1), ""},
		{"A1_ok_never_counted", Counted(SendOf(send, OK), 5), ""},
		{"A1_reopen_refused", Counted(ReopenOf(wire.ReopenRequest{Conversation: "c"}, Refused("not-paired")), 2), `"count":2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line := encodeLine(nil, time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC), Who{Session: "demo", Device: "unknown"}, tt.ev, false, GenesisPrev)
			if got := strings.Contains(string(line), `"count"`); got != (tt.count != "") || tt.count != "" && !strings.Contains(string(line), tt.count) {
				t.Fatalf("line %s, want count %q", line, tt.count)
			}
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("ParseLine(%s): %v", line, err)
			}
			if err := CheckFields(r); err != nil {
				t.Fatalf("CheckFields(%s): %v", line, err)
			}
		})
	}
}
