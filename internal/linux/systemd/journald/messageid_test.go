package journald

import (
	"log/slog"
	"regexp"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

// TestMessageIDs_L2: each searchable event has its own 128-bit id, and the
// attribute becomes the entry's MESSAGE_ID field as it is.
func TestMessageIDs_L2(t *testing.T) {
	ids := map[string]string{
		"daemon started":    MsgDaemonStarted,
		"agent unreachable": MsgAgentUnreachable,
		"agent reachable":   MsgAgentReachable,
		"sources tightened": MsgSourcesTightened,
		"control refused":   MsgControlRefused,
		"audit anchor":      MsgAuditAnchor,
	}
	hex128 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]string{}
	for event, id := range ids {
		if !hex128.MatchString(id) {
			t.Errorf("%s: MESSAGE_ID %q is not 32 lower-case hex digits", event, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s and %s share MESSAGE_ID %s", event, other, id)
		}
		seen[id] = event
	}

	var vars map[string]string
	send := func(_ string, _ journal.Priority, v map[string]string) error { vars = v; return nil }
	slog.New(NewHandler("collie", slog.LevelInfo, send)).Info("collie daemon started", MessageID(MsgDaemonStarted))
	if vars["MESSAGE_ID"] != MsgDaemonStarted {
		t.Errorf("MESSAGE_ID field = %q, want %s (all: %v)", vars["MESSAGE_ID"], MsgDaemonStarted, vars)
	}
}
