package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestDeviceEvents_A1: a device's own writes (turning notifications on or
// off), done or refused, are lines of the log that read back strictly and
// verify, with no session and never a subscription's endpoint; masking
// keeps the push service's origin, which is no one's words (A1, A3, A4).
func TestDeviceEvents_A1(t *testing.T) {
	for _, content := range []Content{ContentFull, ContentNone} {
		dir := filepath.Join(t.TempDir(), "state")
		l, _ := openLog(t, Options{Dir: dir, Content: content})
		dev := Who{Device: "dev-7f3a"}
		evs := []Event{
			PushSubscribe{Service: "https://fcm.googleapis.com", Result: OK},
			PushSubscribe{Result: Refused("bad-subscription: its endpoint is not https")},
			PushUnsubscribe{Result: OK},
			PushUnsubscribe{Result: Failed("store-failed: disk full")},
		}
		for _, ev := range evs {
			record(t, l, dev, ev)
		}
		for _, name := range []string{EventPushSubscribe, EventPushUnsubscribe} {
			ev, err := EventOf(name, nil, Refused("cross-site: a page on another site"))
			if err != nil {
				t.Fatalf("EventOf(%s): %v", name, err)
			}
			record(t, l, dev, ev)
		}
		l.Close()
		ls := lines(t, dir)
		if len(ls) != 6 {
			t.Fatalf("%d lines, want 6", len(ls))
		}
		for i, line := range ls {
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("line %d %s: %v", i, line, err)
			}
			if err := CheckFields(r); err != nil {
				t.Errorf("line %d %s: %v", i, line, err)
			}
			if r.Session != "" || r.Device != "dev-7f3a" {
				t.Errorf("line %d names session %q device %q", i, r.Session, r.Device)
			}
		}
		if !strings.Contains(string(ls[0]), `"service":"https://fcm.googleapis.com"`) || strings.Contains(string(ls[0]), `"result"`) {
			t.Errorf("a subscription turned on: %s", ls[0])
		}
		if rep, err := Verify(dir); err != nil || !rep.Intact() {
			t.Errorf("Verify: %+v, %v", rep, err)
		}
	}
}

// TestAudited_A1: every write the device API serves has an event: the
// protocol's writes and a device's own; nothing else is audited as one.
func TestAudited_A1(t *testing.T) {
	for _, w := range wire.Writes() {
		if !Audited(w.Name) {
			t.Errorf("the write %s has no audit event", w.Name)
		}
	}
	for _, name := range []string{EventPushSubscribe, EventPushUnsubscribe} {
		if !Audited(name) {
			t.Errorf("%s has no audit event", name)
		}
	}
	for _, name := range []string{"", "pair", "nope", "push"} {
		if Audited(name) {
			t.Errorf("%q is audited, but is no write Collie records", name)
		}
	}
}
