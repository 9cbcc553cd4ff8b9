// Package cli is what collie and collie-agent share on the command line:
// usage written from a FlagSet in the --flag form the man pages use,
// flags parsed wherever they stand among the arguments, mistakes on the
// command line as [UsageError], and errors written for the user as text
// (age's "error:" and "hint:" lines) or as JSON.
//
// Program.Main is the one entry point of both binaries: it runs the
// command line, says its error once (Program.Report) and gives it its
// exit status from the one table (ExitCode); see EXIT STATUS in collie(1)
// and collie-agent(1).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// UsageError is a mistake on the command line: exit status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the mistake, perhaps a hint.Error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with the message of fmt.Errorf(format, a...).
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// IsUsage reports whether err is a mistake on the command line.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Parse parses args into fs, flags and positional arguments in any order
// ("attach NAME --socket P" and "attach --socket P NAME"); "--" ends the
// flags. It returns the positional arguments. -h and --help call help
// (which writes the usage to stdout) and return flag.ErrHelp: the command
// returns it, and main exits 0 and prints nothing more. A bad flag is a
// UsageError, printed once, by main: an unknown one says which flag was
// meant, a duration that does not parse says the form, and a flag that
// keeps one value given twice is refused (the flag package would keep
// the last silently).
func Parse(fs *flag.FlagSet, args []string, help func()) ([]string, error) {
	fs.SetOutput(io.Discard) // errors are printed once, by main
	fs.Usage = func() {}
	if err := checkRepeats(fs, args); err != nil {
		return nil, &UsageError{Err: err}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				help()
				return nil, flag.ErrHelp
			}
			return nil, &UsageError{Err: explain(fs, err)}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// flagError is the flag package's error with each flag named as the man
// pages name it: --name, not -name.
func flagError(err error) error {
	msg := err.Error()
	for _, p := range []string{"defined: -", "argument: -", "flag -", "for -"} {
		if i := strings.Index(msg, p); i >= 0 && !strings.HasPrefix(msg[i+len(p):], "-") {
			msg = msg[:i+len(p)] + "-" + msg[i+len(p):]
			break
		}
	}
	return errors.New(msg)
}

// WriteUsage writes a command's usage: its synopsis lines (each after
// "Usage: " or its indent), what it does, and its flags as --flag VALUE,
// from fs, with their defaults where they are not the zero value.
func WriteUsage(w io.Writer, synopsis []string, about string, fs *flag.FlagSet) {
	for i, s := range synopsis {
		lead := "Usage: "
		if i > 0 {
			lead = "       "
		}
		fmt.Fprintln(w, lead+s)
	}
	if about != "" {
		fmt.Fprintf(w, "\n%s\n", about)
	}
	fmt.Fprintln(w, "\nFlags:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if fs != nil {
		fs.VisitAll(func(f *flag.Flag) {
			name, text := flag.UnquoteUsage(f)
			left := "  --" + f.Name
			if name != "" {
				left += " " + strings.ToUpper(name)
			}
			if d := f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" && d != "[]" {
				text += fmt.Sprintf(" (default %s)", d)
			}
			fmt.Fprintf(tw, "%s\t%s\n", left, text)
		})
	}
	fmt.Fprintf(tw, "%s\t%s\n", "  -h, --help", "show this help")
	tw.Flush()
}

// WantsJSON reports whether the command line asks for JSON: fs's --json
// as parsed (fs may be nil), or a --json among args before any "--", also
// where parsing stopped at a mistake.
func WantsJSON(fs *flag.FlagSet, args []string) bool {
	if fs != nil {
		if f := fs.Lookup("json"); f != nil && f.Value.String() == "true" {
			return true
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "-json", "--json=true", "-json=true":
			return true
		}
	}
	return false
}
