package journald

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
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
	if w.msg != "agent demo: unreachable: no socket at /x (poll_ms=3)" || w.pri != journal.PriWarning {
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

// TestPriorityAndMessage_L2: errors are PRIORITY=3, warnings 4, info 6,
// debug 7, and MESSAGE carries the agent and the reason
// in its text, not only in fields, so journalctl's plain output says both.
func TestPriorityAndMessage_L2(t *testing.T) {
	for _, tt := range []struct {
		name  string
		log   func(*slog.Logger)
		pri   journal.Priority
		msg   string
		field [2]string
	}{
		{"error_with_err", func(l *slog.Logger) { l.Error("reload failed", "err", errors.New("sources.json, line 2: bad")) },
			journal.PriErr, "reload failed: sources.json, line 2: bad", [2]string{"ERR", "sources.json, line 2: bad"}},
		{"above_error", func(l *slog.Logger) { l.Log(context.Background(), slog.LevelError+4, "fatal") }, journal.PriErr, "fatal", [2]string{"SYSLOG_IDENTIFIER", "collie"}},
		{"warning_agent_reason", func(l *slog.Logger) {
			l.Warn("durable agent is unreachable", "agent", "demo", "reason", "no socket at /run/d.sock")
		}, journal.PriWarning, "agent demo: durable agent is unreachable: no socket at /run/d.sock", [2]string{"REASON", "no socket at /run/d.sock"}},
		{"agent_from_with", func(l *slog.Logger) { l.With("agent", "build").Error("collie-agent stopped", "err", "listen: busy") },
			journal.PriErr, "agent build: collie-agent stopped: listen: busy", [2]string{"AGENT", "build"}},
		{"info_plain", func(l *slog.Logger) { l.Info("collie daemon started", "agents", 2) }, journal.PriInfo, "collie daemon started (agents=2)", [2]string{"AGENTS", "2"}},
		{"debug", func(l *slog.Logger) { l.Debug("poll", "agent", "a") }, journal.PriDebug, "agent a: poll", [2]string{"AGENT", "a"}},
		{"grouped_agent_is_not_the_agent", func(l *slog.Logger) { l.Info("x", slog.Group("peer", "agent", "b")) }, journal.PriInfo, "x (peer_agent=b)", [2]string{"PEER_AGENT", "b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []entry
			send := func(m string, p journal.Priority, v map[string]string) error {
				got = append(got, entry{m, p, v})
				return nil
			}
			tt.log(slog.New(NewHandler("collie", slog.LevelDebug, send)))
			if len(got) != 1 {
				t.Fatalf("%d entries, want 1", len(got))
			}
			e := got[0]
			if e.pri != tt.pri || e.msg != tt.msg || e.vars[tt.field[0]] != tt.field[1] {
				t.Errorf("entry = %q PRIORITY=%d %v; want %q PRIORITY=%d with %s=%q", e.msg, e.pri, e.vars, tt.msg, tt.pri, tt.field[0], tt.field[1])
			}
		})
	}
}

// TestFatal_L2: a program's last word is PRIORITY=3 with its fields and
// the agent in MESSAGE when stderr is the journal, the <3>-prefixed line on
// stderr if the journal refuses it, and "program: sentence" on a terminal
// .
func TestFatal_L2(t *testing.T) {
	text := "cannot start: /c/demo.toml, line 2: unknown setting \"titel\""
	msg := "agent demo: " + text
	var got []entry
	var stderr bytes.Buffer
	fatal(&stderr, "collie-agent", text, map[string]string{"agent": "demo"}, func(m string, p journal.Priority, v map[string]string) error {
		got = append(got, entry{m, p, v})
		return nil
	})
	if len(got) != 1 || got[0].msg != msg || got[0].pri != journal.PriErr || got[0].vars["AGENT"] != "demo" || got[0].vars["SYSLOG_IDENTIFIER"] != "collie-agent" || stderr.Len() != 0 {
		t.Errorf("to the journal: entries %+v, stderr %q", got, stderr.String())
	}

	stderr.Reset()
	fatal(&stderr, "collie-agent", text, map[string]string{"agent": "demo"}, func(string, journal.Priority, map[string]string) error { return errors.New("socket gone") })
	if stderr.String() != "<3>"+msg+"\n" {
		t.Errorf("journal refused: stderr = %q, want the <3> line", stderr.String())
	}

	stderr.Reset()
	fatal(&stderr, "collie-agent", text, map[string]string{"agent": "demo"}, nil)
	if stderr.String() != "collie-agent: "+text+"\n" {
		t.Errorf("terminal: stderr = %q", stderr.String())
	}
}

// TestRunning_L2: Running says whether journald's socket is there, as
// collie doctor's journald row and collie audit verify's anchors need.
func TestRunning_L2(t *testing.T) {
	fi, err := os.Stat("/run/systemd/journal/socket")
	want := err == nil && fi.Mode()&os.ModeSocket != 0
	if got := Running(); got != want {
		t.Errorf("Running() = %v; the socket is there: %v", got, want)
	}
}

// TestMessageCarriesDetails_L2: journalctl's plain output shows MESSAGE
// only, so a record's details are in MESSAGE as well as in fields: "a
// device was paired" says which device, "pushes" which providers, "write"
// which route and request. The agent and the reason are said once, the
// catalog's MESSAGE_ID is not a detail, a secret never reaches MESSAGE,
// and a value with spaces or a newline is quoted on one line.
func TestMessageCarriesDetails_L2(t *testing.T) {
	for _, tt := range []struct {
		name string
		log  func(*slog.Logger)
		msg  string
	}{
		{"device_paired", func(l *slog.Logger) { l.Info("a device was paired", "device", "d_1f2e", "name", "Pixel 8") },
			`a device was paired (device=d_1f2e name="Pixel 8")`},
		{"pushes", func(l *slog.Logger) { l.Info("pushes", "providers", []string{"ntfy", "webpush"}, "preview", false) },
			`pushes (providers="[ntfy webpush]" preview=false)`},
		{"write", func(l *slog.Logger) {
			l.With("agent", "demo").Info("write", "route", "/answer", "request_id", "r1", "conversation", "main")
		}, `agent demo: write (route=/answer request_id=r1 conversation=main)`},
		{"reason_once", func(l *slog.Logger) {
			l.Warn("durable agent is unreachable", "agent", "demo", "target", "/run/d.sock", "reason", "no socket")
		}, `agent demo: durable agent is unreachable: no socket (target=/run/d.sock)`},
		{"message_id_not_a_detail", func(l *slog.Logger) { l.Info("collie daemon started", MessageID(MsgDaemonStarted), "agents", 1) },
			`collie daemon started (agents=1)`},
		{"secrets_stay_out", func(l *slog.Logger) {
			l.Info("token set", "token", "tk_secret", "refresh_token", "r_secret", "Cookie", "c", "client_secret", "s", "password", "p", "credential", "x", "id", "7")
		}, `token set (id=7)`},
		{"one_line", func(l *slog.Logger) { l.Info("odd", "title", "a\nb", "empty", "", "eq", "a=b") },
			`odd (title="a\nb" empty="" eq="a=b")`},
		{"group", func(l *slog.Logger) { l.Info("x", slog.Group("push", "sent", 2)) }, `x (push_sent=2)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []entry
			send := func(m string, p journal.Priority, v map[string]string) error {
				got = append(got, entry{m, p, v})
				return nil
			}
			tt.log(slog.New(NewHandler("collie", slog.LevelDebug, send)))
			if len(got) != 1 || got[0].msg != tt.msg {
				t.Fatalf("entries %+v; want MESSAGE %q", got, tt.msg)
			}
		})
	}
}
