package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Report is an error as --json prints it, on standard error, one line:
//
//	{"error":"1 check failed","hint":"run the fix shown under it, then collie doctor again","exit":1}
//
// Standard output keeps the command's own JSON (or nothing), so that a
// program reading it never mistakes an error for data; the exit status
// says to read standard error.
type Report struct {
	Error string `json:"error"`
	Hint  string `json:"hint,omitempty"`
	Exit  int    `json:"exit"`
}

// ReportOf is err as a Report with the exit status exit.
func ReportOf(err error, exit int) Report {
	return Report{Error: err.Error(), Hint: hint.Of(err), Exit: exit}
}

// WriteError writes err for the user. As text, as age does, a line for
// the message and one for the hint when there is one:
//
//	collie: error: 1 check failed
//	collie: hint: run the fix shown under it, then collie doctor again
//
// As JSON, a Report. Every character a terminal must not see is escaped
// (X1): a message may quote what an agent sent.
func WriteError(w io.Writer, prog string, err error, exit int, asJSON bool) {
	r := ReportOf(err, exit)
	if asJSON {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(r)
		w.Write(sanitize.TerminalJSON(buf.Bytes()))
		return
	}
	fmt.Fprintf(w, "%s: error: %s\n", prog, oneLine(r.Error))
	if r.Hint != "" {
		fmt.Fprintf(w, "%s: hint: %s\n", prog, oneLine(r.Hint))
	}
}

// Text is err as one line, for where there is room for one only (the
// journal's MESSAGE): the message, then "; " and the hint.
func Text(err error) string {
	if h := hint.Of(err); h != "" {
		return err.Error() + "; " + h
	}
	return err.Error()
}

// oneLine cleans s for the terminal as one line (X1).
func oneLine(s string) string {
	return sanitize.TerminalLine(strings.TrimSpace(s))
}
