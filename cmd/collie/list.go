package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// list is a command that lists what the daemon holds (collie devices,
// agents list, durable list, show), described once: its rows come from
// fetch and are printed as a table of columns, or by text, or with --json
// as a JSON array, [] when there are none, never null. It takes --json
// and no argument.
type list[T any] struct {
	name  string // "collie devices", for its FlagSet and usage
	fetch func(ctx context.Context, e *env, paths config.Paths) ([]T, error)
	empty string // the line said when there are none: what to do to have some

	columns []string                          // the table's header
	row     func(T) []string                  // one row's cells; each is cleaned as one line
	text    func(w io.Writer, rows []T) error // instead of a table, when set
}

// run is the command: flags, the rows, and them printed.
func (l list[T]) run(ctx context.Context, e *env, args []string) error {
	paths, asJSON, err := daemonRead(e, l.name, args)
	if err != nil {
		return err
	}
	rows, err := l.fetch(ctx, e, paths)
	if err != nil {
		return err
	}
	return l.print(e.stdout, rows, asJSON)
}

// print writes rows as the command prints them.
func (l list[T]) print(w io.Writer, rows []T, asJSON bool) error {
	switch {
	case asJSON:
		if rows == nil {
			rows = []T{} // none is [], not null
		}
		return writeJSON(w, rows)
	case len(rows) == 0:
		_, err := fmt.Fprintln(w, l.empty)
		return err
	case l.text != nil:
		out := sanitize.NewTerminalWriter(w)
		if err := l.text(out, rows); err != nil {
			return err
		}
		return out.Flush()
	}
	return writeTable(w, l.columns, rows, l.row)
}

// daemonRead is how every command that reads the daemon starts: its
// flags (--json and no argument) and the paths of its socket and files.
func daemonRead(e *env, name string, args []string) (paths config.Paths, asJSON bool, err error) {
	fs := newFlags(name, e)
	j := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return config.Paths{}, false, err
	}
	paths, err = e.paths()
	return paths, *j, err
}

// daemonOne is how a command that acts on one thing the daemon holds
// starts (collie devices revoke ID): no flag, one argument, else a
// mistake whose hint says where to find one (give and where); then the
// paths of the daemon's socket and files. The id comes back cleaned for
// the terminal, for the command's sentence; what the daemon is sent is
// as given.
func daemonOne(e *env, name string, args []string, give, where string) (id, said string, paths config.Paths, err error) {
	ids, err := parseArgs(newFlags(name, e), args, 0, -1)
	if err != nil {
		return "", "", config.Paths{}, err
	}
	if len(ids) != 1 {
		return "", "", config.Paths{}, &cli.UsageError{Err: hint.New(give+": "+name+" ID", where)}
	}
	paths, err = e.paths()
	return ids[0], sanitize.TerminalLine(ids[0]), paths, err
}

// writeTable writes a header and a line per row, in aligned columns.
// Every cell is cleaned for the terminal as one line (X1): a cell may
// come from an agent or a device, and a tab or newline in it would forge
// a column or a row.
func writeTable[T any](w io.Writer, columns []string, rows []T, row func(T) []string) error {
	out := sanitize.NewTerminalWriter(w)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for _, r := range rows {
		cells := row(r)
		for i, c := range cells {
			cells[i] = sanitize.TerminalLine(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return out.Flush()
}

// writeJSON writes v as indented JSON, with every character a terminal
// must not see written as a \u escape (X1): it means the same to a JSON
// reader, and nothing to a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(sanitize.TerminalJSON(buf.Bytes()))
	return err
}
