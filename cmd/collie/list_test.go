package main

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// TestListPrints_L4: every list command prints from one description: a
// JSON array ([] for none, never null), the empty line, a table whose
// cells are cleaned as one line each (X1), or its own text through a
// terminal-safe writer.
func TestListPrints_L4(t *testing.T) {
	type row struct{ a, b string }
	table := list[row]{empty: "none; add one", columns: []string{"A", "B"}, row: func(r row) []string { return []string{r.a, r.b} }}
	text := table
	text.text = func(w io.Writer, rows []row) error {
		for _, r := range rows {
			fmt.Fprintf(w, "%s=%s\n", r.a, r.b)
		}
		return nil
	}
	for _, tt := range []struct {
		name   string
		l      list[row]
		rows   []row
		asJSON bool
		want   string
	}{
		{"json_none", table, nil, true, "[]\n"},
		{"json_empty", table, []row{}, true, "[]\n"},
		{"empty", table, nil, false, "none; add one\n"},
		{"table", table, []row{{"x", "long value"}, {"yy", "z"}}, false, "A   B\nx   long value\nyy  z\n"},
		{"table_hostile", table, []row{{"a\tb", "c\nFORGED  row\x1b[2J"}}, false, "A   B\nab  cFORGED  row[2J\n"},
		{"text", text, []row{{"k", "v\x1b]0;t\x07"}}, false, "k=v]0;t\n"},
		{"text_empty", text, nil, false, "none; add one\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.l.print(&b, tt.rows, tt.asJSON); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("printed %q; want %q", b.String(), tt.want)
			}
		})
	}
}
