package bridge

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestAuditorRegistry: each write of the protocol's registry, forwarded or
// refused before it was read, is recorded as its A3 event;
// a write name outside the registry is recorded as nothing at all (no
// fallback to another event) and logged as an error (A1, A3).
func TestAuditorRegistry(t *testing.T) {
	dir := t.TempDir()
	log, _, err := audit.Open(audit.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	a := Auditor{Log: log, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	d := store.Device{ID: "d-1", Name: "phone"}
	var want []string // the event of each line
	for _, w := range wire.Writes() {
		a.Begin(d, "demo", w.Name, w.New()).End("ok", "")
		a.Refused(device.Refusal{Device: d.ID, Agent: "demo", Write: w.Name, Code: "cross-site", Count: 1})
		ev, err := audit.EventOf(w.Name, nil, audit.OK)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		want = append(want, ev.Name(), ev.Name(), ev.Name())
	}
	for _, name := range []string{"nope", "", "Answer", "starter.start", "pair"} {
		a.Begin(d, "demo", name, nil).End("ok", "")
		a.Begin(d, "demo", name, &wire.SendRequest{Header: wire.Header{RequestID: "r"}, Conversation: "c", Text: "x"}).End("refused", "no")
		a.Refused(device.Refusal{Device: d.ID, Agent: "demo", Write: name, Code: "cross-site", Count: 3})
	}
	// A request of another write's type under a known name.
	a.Begin(d, "demo", wire.AnswerWrite, &wire.SendRequest{Header: wire.Header{RequestID: "r"}, Conversation: "c", Text: "x"}).End("ok", "")
	log.Close()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d (an intent, an outcome and a refusal for each write of the registry, nothing for the rest):\n%s", len(lines), len(want), data)
	}
	for i, l := range lines {
		var line struct{ Event string }
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Event != want[i] {
			t.Errorf("line %d: event %q, want %s: %s", i, line.Event, want[i], l)
		}
	}
	if n := strings.Count(logged.String(), "level=ERROR"); n != 5*3+1 {
		t.Errorf("%d errors logged for the 16 writes outside the registry, want one each:\n%s", n, logged.String())
	}
}
