package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// TestRenderHostileX1: a row's message may carry what an agent said (its
// reason, its config check's output). Neither the text nor the JSON
// writes a control, direction or invisible character, and no field forges
// a row (X1).
func TestRenderHostileX1(t *testing.T) {
	const raw = "agent said \x1b]0;pwned\x07\u202e\U000E0041\r\n✗ fail  fake-row  forged\u009b2J\u00ad"
	rows := []Row{
		{Check: "daemon", Status: Fail, Message: raw, Fix: raw},
		{Check: "durable-socket", Subject: "evil" + raw, Status: Warn, Message: "ok"},
	}
	var text bytes.Buffer
	if err := WriteText(&text, rows); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if sanitize.Terminal(out) != out || strings.Contains(out, "\t") {
		t.Errorf("WriteText writes what a terminal must not see:\n%q", out)
	}
	// 2 rows, 1 fix, a blank line and the summary.
	if n := strings.Count(out, "\n"); n != 5 {
		t.Errorf("WriteText wrote %d lines, want 5 (a field forged a row):\n%s", n, out)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rows); err != nil {
		t.Fatal(err)
	}
	if s := js.String(); sanitize.Terminal(s) != s {
		t.Errorf("WriteJSON writes what a terminal must not see:\n%q", s)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Rows[0].Message != raw {
		t.Errorf("the JSON no longer means the same: %v, %q", err, back.Rows[0].Message)
	}
}
