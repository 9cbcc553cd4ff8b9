package bridge

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/audit"
	"github.com/collie-linux/collie/internal/device"
	"github.com/collie-linux/collie/internal/wire"
)

// TestAuditor: every device write lands in the audit log as its A3 event,
// with the device and the agent, and typed words never do (A1–A3).
func TestAuditor(t *testing.T) {
	dir := t.TempDir()
	log, _, err := audit.Open(audit.Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	a := Auditor{Log: log, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	d := device.Device{ID: "d-1", Name: "phone"}
	const secret = "the typed secret words"
	writes := []struct {
		name  string
		req   wire.Request
		event string
	}{
		{"answer", &wire.AnswerRequest{RequestID: "r1", Conversation: "c", Question: "q", Revision: 2, Text: secret}, "answer"},
		{"send", &wire.SendRequest{RequestID: "r2", Conversation: "c", Text: "hello"}, "send"},
		{"abort", &wire.AbortRequest{RequestID: "r3", Conversation: "c"}, "abort"},
		{"action", &wire.ActionRequest{RequestID: "r4", Action: "b1"}, "action"},
		{"starter", &wire.StarterRequest{RequestID: "r5", Starter: "s1"}, "starter.start"},
		{"reopen", &wire.ReopenRequest{RequestID: "r6", Conversation: "c"}, "durable.reopen"},
		{"close", &wire.CloseRequest{RequestID: "r7", Conversation: "c"}, "pane.close"},
		{"rename", &wire.RenameRequest{RequestID: "r8", Space: "s", Title: "New"}, "space.rename"},
		{"answer", nil, "answer"}, // refused before it could be read
	}
	for _, w := range writes {
		a.Write(d, "demo", w.name, w.req, "refused", "because")
	}
	log.Close()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != len(writes) {
		t.Fatalf("%d lines for %d writes:\n%s", len(lines), len(writes), data)
	}
	for i, w := range writes {
		l := lines[i]
		if !strings.Contains(l, `"event":"`+w.event+`"`) || !strings.Contains(l, `"device":"d-1"`) || !strings.Contains(l, `"session":"demo"`) || !strings.Contains(l, `"refused"`) {
			t.Errorf("A2/A3 line %d for %s: %s", i, w.name, l)
		}
	}
	if strings.Contains(string(data), secret) {
		t.Fatal("A3: the typed words of an answer are in the audit log")
	}
}
