package journal

import (
	"log/slog"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

type entry struct {
	msg  string
	pri  journal.Priority
	vars map[string]string
}

func TestHandler(t *testing.T) {
	var got []entry
	send := func(m string, p journal.Priority, v map[string]string) error {
		got = append(got, entry{m, p, v})
		return nil
	}
	log := slog.New(NewHandler("collie", slog.LevelInfo, send))
	log.Debug("hidden")
	log.With("agent", "demo").Warn("unreachable", "reason", "no socket at /x", slog.Group("poll", "ms", 3))
	log.Error("broken", "_secret-key", "v", "9lives", 1)
	log.Info("ok")

	if len(got) != 3 {
		t.Fatalf("got %d entries, want 3 (debug filtered out)", len(got))
	}
	w := got[0]
	if w.msg != "unreachable" || w.pri != journal.PriWarning {
		t.Errorf("entry 0 = %q pri %d", w.msg, w.pri)
	}
	for k, v := range map[string]string{"AGENT": "demo", "REASON": "no socket at /x", "POLL_MS": "3", "SYSLOG_IDENTIFIER": "collie"} {
		if w.vars[k] != v {
			t.Errorf("field %s = %q, want %q (all: %v)", k, w.vars[k], v, w.vars)
		}
	}
	if got[1].pri != journal.PriErr || got[1].vars["SECRET_KEY"] != "v" || got[1].vars["F9LIVES"] != "1" {
		t.Errorf("entry 1 = %+v", got[1])
	}
	if got[2].pri != journal.PriInfo {
		t.Errorf("info priority = %d", got[2].pri)
	}
}
