package cli

import (
	"context"
	"io"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
)

// Program is what Main needs of a binary to say its errors: its name and
// where it writes. collie and collie-agent each fill one in, and Main runs
// their command line.
type Program struct {
	Name   string    // "collie": what every error line starts with
	Stderr io.Writer // where errors go
	JSON   bool      // the command line asked for JSON: errors are JSON too

	// Command is the command that ran, such as "durable attach", read
	// when a mistake on the command line is reported ("see collie
	// durable attach --help"); nil or "" is the program itself.
	Command func() string
	// Journal is the fields besides HINT of the journal entry that is the
	// program's last word under systemd (collie-agent's AGENT); may be nil.
	Journal func() map[string]string
}

// Main runs a command line, run, and returns its exit status, from the
// one table (ExitCode). An error is said once, by Report, unless the
// command said it already (Said). os.Exit is for func main alone.
func (p Program) Main(ctx context.Context, run func(context.Context) error) int {
	err := run(ctx)
	code := ExitCode(err)
	if err != nil && !Said(err) {
		p.Report(err, code)
	}
	return code
}

// Report says err as the user reads it: age's "NAME: error:" and "NAME:
// hint:" lines, or with JSON one Report object, on stderr. A mistake on
// the command line without a hint of its own points at the command's
// --help. Under systemd, where stderr is the journal, the error is the
// program's last word: one entry at PRIORITY=3, message and hint in
// MESSAGE and the hint in HINT besides.
func (p Program) Report(err error, code int) {
	if IsUsage(err) && hint.Of(err) == "" {
		see := p.Name
		if p.Command != nil {
			if c := p.Command(); c != "" {
				see += " " + c
			}
		}
		err = hint.Wrap(err, "see "+see+" --help")
	}
	if !p.JSON && journald.ToJournal() {
		fields := map[string]string{}
		if p.Journal != nil {
			for k, v := range p.Journal() {
				fields[k] = v
			}
		}
		if h := hint.Of(err); h != "" {
			fields["hint"] = h
		}
		if len(fields) == 0 {
			fields = nil
		}
		journald.Fatal(p.Stderr, p.Name, Text(err), fields)
		return
	}
	WriteError(p.Stderr, p.Name, err, code, p.JSON)
}
