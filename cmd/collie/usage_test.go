package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
)

// collie runs collie's main with args, as a shell would.
func collie(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// helpFlags are the flags command c's --help lists, as --flag.
func helpFlags(t *testing.T, c command) []string {
	t.Helper()
	_, out, _ := collie(t, append(strings.Fields(c.name), "--help")...)
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(--[a-z][a-z-]*)`).FindAllStringSubmatch(out, -1) {
		flags = append(flags, m[1])
	}
	return flags
}

// TestEveryCommandHelp_L4: --help and -h of every command in the table
// exit 0 with the command's usage on stdout, nothing on stderr, and every
// flag as --flag. A command that runs before it parses
// its flags, or parses them by hand, fails here.
func TestEveryCommandHelp_L4(t *testing.T) {
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-gi-z]|[\s\[]-[a-z][a-z-]+\b`)
	for _, c := range commands() {
		for _, h := range []string{"--help", "-h"} {
			t.Run(strings.ReplaceAll(c.name, " ", "_")+h, func(t *testing.T) {
				code, out, errOut := collie(t, append(strings.Fields(c.name), h)...)
				if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: collie "+c.name) {
					t.Fatalf("exit %d, stderr %q, stdout %q; want 0, nothing, Usage: collie %s", code, errOut, out, c.name)
				}
				if m := singleDash.FindString(out); m != "" {
					t.Errorf("a flag in -flag form (%q):\n%s", m, out)
				}
				for _, f := range regexp.MustCompile(`--[a-z][a-z-]*`).FindAllString(strings.Join(c.synopsis, " "), -1) {
					if !strings.Contains(out, f) {
						t.Errorf("--help does not list %s of the synopsis:\n%s", f, out)
					}
				}
			})
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"durable", "--help"}, {"durable", "-h"}} {
		code, out, errOut := collie(t, args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "Usage: collie") {
			t.Errorf("collie %q: exit %d, stderr %q, stdout %q", args, code, errOut, out)
		}
	}
}

// TestBadFlag_L4: a flag no command knows is said once, on stderr, with
// the way to the command's help, and exits 2; with --json the same as one
// JSON object.
func TestBadFlag_L4(t *testing.T) {
	for _, c := range commands() {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			code, out, errOut := collie(t, append(strings.Fields(c.name), "--no-such-flag")...)
			want := fmt.Sprintf("collie: error: flag provided but not defined: --no-such-flag\ncollie: hint: see collie %s --help\n", c.name)
			if code != 2 || out != "" || errOut != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
			}
			bad := "--no-such-flag" // or --json itself, where the command has none
			if !slices.Contains(helpFlags(t, c), "--json") {
				bad = "--json"
			}
			code, out, errOut = collie(t, append(strings.Fields(c.name), "--json", "--no-such-flag")...)
			want = fmt.Sprintf(`{"error":"flag provided but not defined: %s","hint":"see collie %s --help","exit":2}`+"\n", bad, c.name)
			if code != 2 || out != "" || errOut != want {
				t.Errorf("--json: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errOut, want)
			}
		})
	}
}

// TestUsageScriptWalksEveryCommand_L4: testdata/script/usage.txtar runs
// --help and -h of every command of the table, so that the built binary
// is walked too, and a new command cannot be left out.
func TestUsageScriptWalksEveryCommand_L4(t *testing.T) {
	b, err := os.ReadFile("testdata/script/usage.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands() {
		for _, h := range []string{"--help", "-h"} {
			if line := "exec collie " + c.name + " " + h + "\n"; !strings.Contains(string(b), line) {
				t.Errorf("usage.txtar lacks %q", strings.TrimSpace(line))
			}
		}
	}
}

// TestManPageListsTheTable_L4: collie(1)'s SYNOPSIS names exactly the
// commands of the table (help aside): a command documented but missing
// from the table, or one added to the table but not documented, fails.
func TestManPageListsTheTable_L4(t *testing.T) {
	b, err := os.ReadFile("../../man/collie.1.md")
	if err != nil {
		t.Fatal(err)
	}
	synopsis, _, _ := strings.Cut(string(b), "DESCRIPTION")
	var documented []string
	for _, m := range regexp.MustCompile(`(?m)^\*\*collie ([a-z ]+)\*\*`).FindAllStringSubmatch(synopsis, -1) {
		if !slices.Contains(documented, m[1]) {
			documented = append(documented, m[1])
		}
	}
	var table []string
	for _, c := range commands() {
		if c.name != "help" {
			table = append(table, c.name)
		}
	}
	slices.Sort(documented)
	slices.Sort(table)
	if !slices.Equal(documented, table) {
		t.Errorf("collie(1) SYNOPSIS has %q;\nthe command table has %q", documented, table)
	}
}

// TestExitCodes_L4: the one table of exit statuses, as collie(1) EXIT
// STATUS gives it.
func TestExitCodes_L4(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		code int
	}{
		{"ok", nil, 0},
		{"help", flag.ErrHelp, 0},
		{"failed", errors.New("boom"), 1},
		{"failed_with_hint", hint.New("1 check failed", "run the fix"), 1},
		{"usage", cli.Usagef("unexpected argument %q", "x"), 2},
		{"usage_wrapped", fmt.Errorf("attach: %w", cli.Usagef("x")), 2},
		{"ask_no", ask.ErrNo, 1},
		{"ask_timed_out", ask.ErrTimedOut, 3},
		{"ask_withdrawn", ask.ErrWithdrawn, 4},
		{"ask_unasked", &ask.Unasked{Err: errors.New("no agent")}, 5},
		{"run_child", runExit(7), 7},
		{"run_signal", fmt.Errorf("run: %w", runExit(130)), 130},
	} {
		if got := exitCode(tt.err); got != tt.code {
			t.Errorf("%s: exitCode = %d; want %d", tt.name, got, tt.code)
		}
	}
}
