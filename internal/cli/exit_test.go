package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/cli/hint"
)

// TestExitTable_L4: the one table of exit statuses both binaries exit
// with, and which errors the command said already.
func TestExitTable_L4(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		code int
		said bool
	}{
		{"ok", nil, ExitOK, false},
		{"help", flag.ErrHelp, ExitOK, true},
		{"failed", errors.New("boom"), ExitFailed, false},
		{"failed_with_hint", hint.New("1 check failed", "run the fix"), ExitFailed, false},
		{"usage", Usagef("unexpected argument %q", "x"), ExitUsage, false},
		{"usage_wrapped", fmt.Errorf("attach: %w", Usagef("x")), ExitUsage, false},
		{"no", ErrNo, ExitFailed, true},
		{"timed_out", ErrTimedOut, ExitTimedOut, true},
		{"withdrawn", fmt.Errorf("ask: %w", ErrWithdrawn), ExitWithdrawn, true},
		{"unasked", &Unasked{Err: errors.New("no agent")}, ExitUnasked, false},
		{"status", Status(130), 130, true},
		{"status_wrapped", fmt.Errorf("run: %w", Status(7)), 7, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.code {
				t.Errorf("ExitCode = %d; want %d", got, tt.code)
			}
			if got := Said(tt.err); got != tt.said {
				t.Errorf("Said = %v; want %v", got, tt.said)
			}
		})
	}
}

// TestMainSaysOnce_L4: Main says an error once, with the hint that
// points at the command's --help for a mistake on the command line, and
// nothing for one the command said already.
func TestMainSaysOnce_L4(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		json bool
		code int
		want string
	}{
		{"usage", Usagef("unexpected argument %q", "x"), false, 2, "prog: error: unexpected argument \"x\"\nprog: hint: see prog sub --help\n"},
		{"usage_json", Usagef("nope"), true, 2, `{"error":"nope","hint":"see prog sub --help","exit":2}` + "\n"},
		{"failed", hint.New("1 check failed", "run the fix"), false, 1, "prog: error: 1 check failed\nprog: hint: run the fix\n"},
		{"said", ErrNo, false, 1, ""},
		{"help", flag.ErrHelp, false, 0, ""},
		{"ok", nil, false, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("JOURNAL_STREAM", "")
			var errb bytes.Buffer
			p := Program{Name: "prog", Stderr: &errb, JSON: tt.json, Command: func() string { return "sub" }}
			code := p.Main(context.Background(), func(context.Context) error { return tt.err })
			if code != tt.code || errb.String() != tt.want {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errb.String(), tt.code, tt.want)
			}
		})
	}
}

// TestExitStatusDocumented_L4: every status of the table is in EXIT STATUS
// of collie(1), and collie-agent(1) points at that table.
func TestExitStatusDocumented_L4(t *testing.T) {
	section := func(page string) string {
		b, err := os.ReadFile("../../man/" + page)
		if err != nil {
			t.Fatal(err)
		}
		_, s, ok := strings.Cut(string(b), "\nEXIT STATUS\n")
		if !ok {
			t.Fatalf("%s has no EXIT STATUS", page)
		}
		if i := regexp.MustCompile(`\n[A-Z][A-Z ]+\n---`).FindStringIndex(s); i != nil {
			s = s[:i[0]]
		}
		return s
	}
	collie := section("collie.1.md")
	for _, code := range []int{ExitOK, ExitFailed, ExitUsage, ExitTimedOut, ExitWithdrawn, ExitUnasked} {
		if !strings.Contains(collie, fmt.Sprintf("\n**%d**\n: ", code)) {
			t.Errorf("collie(1) EXIT STATUS does not give status %d", code)
		}
	}
	if agent := section("collie-agent.1.md"); !strings.Contains(agent, "**collie**(1) EXIT STATUS") {
		t.Errorf("collie-agent(1) EXIT STATUS does not point at collie(1)'s table")
	}
}
