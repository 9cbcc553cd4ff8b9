package doctor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// glyphs mark each status; the status word follows, so the output reads
// the same without colour or Unicode fonts.
var glyphs = map[Status]string{OK: "✓", Warn: "!", Fail: "✗", Skip: "-"}

// WriteText writes one line per row (glyph, status, check, message), the
// fix under every row that has one, and a summary:
//
//	✓ ok    binary               collie 0.1.0 at /usr/bin/collie; …
//	✗ fail  durable-socket demo  socket-not-private: /run/user/1000/desk/demo.sock is a symlink
//	                             fix: rm /run/user/1000/desk/demo.sock && systemctl --user restart collie-agent@demo.socket
//
// A row's message can carry what an agent or another program said (a
// reason from the agent, the agent's own config check), so every field is
// cleaned for the terminal as one line (X1): no control, direction or
// invisible character, and no newline that would forge a row.
func WriteText(w io.Writer, rows []Row) error {
	width := 0
	for _, r := range rows {
		width = max(width, len(label(r)))
	}
	var b strings.Builder
	indent := strings.Repeat(" ", 2+6+width+2)
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %-4s  %-*s  %s\n", glyphs[r.Status], r.Status, width, label(r), sanitize.TerminalLine(r.Message))
		if r.Fix != "" {
			fmt.Fprintf(&b, "%sfix: %s\n", indent, sanitize.TerminalLine(r.Fix))
		}
	}
	b.WriteString("\n" + Summary(rows) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func label(r Row) string {
	if r.Subject == "" {
		return sanitize.TerminalLine(r.Check)
	}
	return sanitize.TerminalLine(r.Check + " " + r.Subject)
}

// Summary counts the rows by status: "1 failed, 2 warnings, 8 ok, 1 skipped".
func Summary(rows []Row) string {
	n := map[Status]int{}
	for _, r := range rows {
		n[r.Status]++
	}
	plural := func(k int, one, many string) string {
		if k == 1 {
			return one
		}
		return many
	}
	parts := []string{}
	if n[Fail] > 0 {
		parts = append(parts, fmt.Sprintf("%d failed", n[Fail]))
	}
	if n[Warn] > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", n[Warn], plural(n[Warn], "warning", "warnings")))
	}
	parts = append(parts, fmt.Sprintf("%d ok", n[OK]))
	if n[Skip] > 0 {
		parts = append(parts, fmt.Sprintf("%d skipped", n[Skip]))
	}
	return strings.Join(parts, ", ")
}

// Report is what --json prints.
type Report struct {
	OK   bool  `json:"ok"` // no row failed
	Rows []Row `json:"rows"`
}

// WriteJSON writes the rows as a Report, with every character a terminal
// must not see written as a \u escape (X1).
func WriteJSON(w io.Writer, rows []Row) error {
	if rows == nil {
		rows = []Row{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Report{OK: Failed(rows) == 0, Rows: rows}); err != nil {
		return err
	}
	_, err := w.Write(sanitize.TerminalJSON(buf.Bytes()))
	return err
}
