package bridge

import (
	"io"
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

// TestAuditor: every device write lands in the audit log as its A3 event,
// with the device and the agent, and typed words never do (A1–A3); its
// intent is noted before it is forwarded, so a crash leaves an outcome
// unknown rather than nothing (A5).
func TestAuditor(t *testing.T) {
	dir := t.TempDir()
	log, _, err := audit.Open(audit.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	a := Auditor{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d := store.Device{ID: "d-1", Name: "phone"}
	const secret = "the typed secret words"
	writes := []struct {
		name  string
		req   wire.WriteRequest
		event string
	}{
		{"answer", &wire.AnswerRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Question: "q", Revision: 2, Text: secret}, "answer"},
		{"send", &wire.SendRequest{Header: wire.Header{RequestID: "r2"}, Conversation: "c", Text: "hello"}, "send"},
		{"abort", &wire.AbortRequest{Header: wire.Header{RequestID: "r3"}, Conversation: "c"}, "abort"},
		{"action", &wire.ActionRequest{Header: wire.Header{RequestID: "r4"}, Action: "b1"}, "action"},
		{"starter", &wire.StarterRequest{Header: wire.Header{RequestID: "r5"}, Starter: "s1"}, "starter.start"},
		{"reopen", &wire.ReopenRequest{Header: wire.Header{RequestID: "r6"}, Conversation: "c"}, "durable.reopen"},
		{"close", &wire.CloseRequest{Header: wire.Header{RequestID: "r7"}, Conversation: "c"}, "pane.close"},
		{"rename", &wire.RenameRequest{Header: wire.Header{RequestID: "r8"}, Space: "s", Title: "New"}, "space.rename"},
		{"answer", nil, "answer"}, // refused before it could be read
	}
	for _, w := range writes {
		a.Begin(d, "demo", w.name, w.req).End("refused", "because")
	}
	// A write the bridge began but never ended (it stopped in between).
	a.Begin(d, "demo", "send", &wire.SendRequest{Header: wire.Header{RequestID: "r9"}, Conversation: "c", Text: "cut"})
	log.Close()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2*len(writes)+1 {
		t.Fatalf("%d lines for %d writes, each an intent and an outcome, and one intent:\n%s", len(lines), len(writes), data)
	}
	for i, w := range writes {
		intent, end := lines[2*i], lines[2*i+1]
		for _, l := range []string{intent, end} {
			if !strings.Contains(l, `"event":"`+w.event+`"`) || !strings.Contains(l, `"device":"d-1"`) || !strings.Contains(l, `"session":"demo"`) {
				t.Errorf("A2/A3 line for %s: %s", w.name, l)
			}
		}
		if !strings.Contains(intent, `"pending"`) {
			t.Errorf("A5: the line before forwarding %s is not pending: %s", w.name, intent)
		}
		if !strings.Contains(end, `"refused"`) || !strings.Contains(end, `"intent"`) {
			t.Errorf("A5: the outcome of %s does not name its intent: %s", w.name, end)
		}
	}
	rep, err := audit.Verify(dir)
	if err != nil || !rep.Intact() || len(rep.Unfinished) != 1 {
		t.Fatalf("verify: want intact with one write of unknown outcome: %+v %v", rep, err)
	}
	if strings.Contains(string(data), secret) {
		t.Fatal("A3: the typed words of an answer are in the audit log")
	}
}

// TestAuditorRefused: a refused write whose device is unknown or revoked
// has its line, named without the credential; a coalesced line carries
// its count; the log verifies with them (A1, A2).
func TestAuditorRefused(t *testing.T) {
	dir := t.TempDir()
	log, _, err := audit.Open(audit.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	a := Auditor{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	send := &wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hello"}
	refusals := []struct {
		r    device.Refusal
		want []string
	}{
		{device.Refusal{Device: store.UnknownDevice, Agent: "demo", Write: "send", Code: "not-paired", Reason: "this device is not paired", Count: 1},
			[]string{`"device":"unknown"`, `"event":"send"`, `"result":"refused"`, `"reason":"not-paired: this device is not paired"`}},
		{device.Refusal{Device: "d-revoked", Agent: "demo", Write: "answer", Code: "not-paired", Reason: "revoked", Count: 1},
			[]string{`"device":"d-revoked"`, `"event":"answer"`}},
		{device.Refusal{Device: store.NoDevice, Agent: "demo", Write: "send", Req: send, Code: "cross-site", Reason: "a write needs the header", Count: 37},
			[]string{`"device":""`, `"requestId":"r1"`, `"count":37`, `"reason":"cross-site: a write needs the header"`}},
		// A device's own settings (A1): turning notifications on or off.
		{device.Refusal{Device: "d-1", Write: "push.subscribe", Code: "bad-subscription", Reason: "its endpoint is not https", Count: 1},
			[]string{`"session":""`, `"device":"d-1"`, `"event":"push.subscribe"`, `"service":""`, `"result":"refused"`}},
		{device.Refusal{Device: "d-1", Write: "push.unsubscribe", Code: "cross-site", Reason: "a write needs the header", Count: 3},
			[]string{`"event":"push.unsubscribe"`, `"count":3`}},
	}
	for _, r := range refusals {
		a.Refused(r.r)
	}
	log.Close()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(refusals) {
		t.Fatalf("%d lines for %d refusals:\n%s", len(lines), len(refusals), data)
	}
	for i, r := range refusals {
		for _, w := range r.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d lacks %s: %s", i+1, w, lines[i])
			}
		}
		if (i < 2 || i == 3) && strings.Contains(lines[i], `"count"`) {
			t.Errorf("a single refusal carries a count: %s", lines[i])
		}
	}
	rep, err := audit.Verify(dir)
	if err != nil || !rep.Intact() || rep.Records != len(refusals) {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// TestAuditorSetting_A1: a device turning notifications on or off is a
// line of the audit log, with the push service's origin and never the
// subscription's endpoint, and the chain verifies (A1).
func TestAuditorSetting_A1(t *testing.T) {
	dir := t.TempDir()
	log, _, err := audit.Open(audit.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	a := Auditor{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d := store.Device{ID: "d-1"}
	a.Setting(d, audit.PushSubscribe{Service: "https://push.example", Result: audit.OK})
	a.Setting(d, audit.PushUnsubscribe{Result: audit.Failed("store-failed: disk full")})
	log.Close()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	want := [][]string{
		{`"device":"d-1"`, `"event":"push.subscribe"`, `"service":"https://push.example"`},
		{`"event":"push.unsubscribe"`, `"result":"failed"`, `"reason":"store-failed: disk full"`},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), data)
	}
	for i, ws := range want {
		for _, w := range ws {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d lacks %s: %s", i+1, w, lines[i])
			}
		}
	}
	if rep, err := audit.Verify(dir); err != nil || !rep.Intact() || rep.Records != 2 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
