package ask

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/cli"
)

// Main runs Run as collie's and collie-agent's mains do, through the CLI
// core (cli.Program.Main): the error said for the user unless it is a
// decision already shown, and its exit status from the one table. The
// tests use it to see what a script sees.
func Main(ctx context.Context, args []string, e Env) int {
	p := cli.Program{Name: e.Prog, Stderr: e.Stderr}
	return p.Main(ctx, func(ctx context.Context) error { return Run(ctx, args, e) })
}

// TestFlagsBeforeSocket_D1: a mistake on the command line is exit status
// 2 with no agent anywhere (no socket, no $XDG_RUNTIME_DIR); only a good
// command line goes on to look for the agent, and fails there with 5
// .
func TestFlagsBeforeSocket_D1(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no_kind", []string{"Title?"}, ExitUsage, "give exactly one kind"},
		{"no_title", []string{"--yes-no"}, ExitUsage, "no title"},
		{"bad_flag", []string{"--nope", "--yes-no", "T?"}, ExitUsage, "collie ask: error: flag provided but not defined: --nope\ncollie ask: hint: see collie ask --help\n"},
		{"bad_form", []string{"--form", "x", "T?"}, ExitUsage, "is not ID=LABEL"},
		{"negative_timeout", []string{"--timeout", "-1s", "--yes-no", "T?"}, ExitUsage, "must not be negative"},
		{"title_twice", []string{"--yes-no", "--title", "A", "B"}, ExitUsage, "give the title once"},
		{"good_but_no_agent", []string{"--yes-no", "T?"}, ExitError, "XDG_RUNTIME_DIR is not set"},
		{"title_before_flags", []string{"T?", "--yes-no"}, ExitError, "XDG_RUNTIME_DIR is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Main(context.Background(), tt.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
				Getenv: func(string) string { return "" }, Prog: "collie ask"})
			if code != tt.code || !strings.Contains(errb.String(), tt.want) || out.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d and %q", code, out.String(), errb.String(), tt.code, tt.want)
			}
		})
	}
}

// TestUsageNamesEveryFlag_L4: ask's and grants' --help print to stdout,
// exit 0, and name every flag the commands take, as --flag.
func TestUsageNamesEveryFlag_L4(t *testing.T) {
	e := func(out *bytes.Buffer) Env {
		return Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: out, Getenv: func(string) string { return "" }, Prog: "collie-agent ask"}
	}
	flagsOf := map[string][]string{
		"ask":    {"yes-no", "line", "choice", "form", "title", "rationale", "tool-call", "tool", "command", "timeout", "json", "socket", "agent", "hook"},
		"grants": {"socket", "agent", "name", "revoke", "revoke-all", "json"},
	}
	for _, cmd := range []string{"ask", "grants"} {
		for _, h := range []string{"--help", "-h"} {
			var out bytes.Buffer
			run := Run
			if cmd == "grants" {
				run = Grants
			}
			if err := run(context.Background(), []string{h}, e(&out)); !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("%s %s: %v", cmd, h, err)
			}
			if !strings.HasPrefix(out.String(), "Usage: collie-agent ask") && cmd == "ask" {
				t.Errorf("%s %s: %q", cmd, h, out.String())
			}
			for _, f := range flagsOf[cmd] {
				if !regexp.MustCompile(`--` + f + `\b`).MatchString(out.String()) {
					t.Errorf("%s %s does not name --%s:\n%s", cmd, h, f, out.String())
				}
			}
			if regexp.MustCompile(`(?m)^\s+-[a-gi-z]`).MatchString(out.String()) {
				t.Errorf("%s %s shows a -flag:\n%s", cmd, h, out.String())
			}
		}
	}
}

// TestHelpGenerated_L4: ask's and grants' help is generated from their
// flags as every other command's is (cli.WriteUsage): a Flags section
// with each flag once, in order, with what it does, then -h, --help.
func TestHelpGenerated_L4(t *testing.T) {
	flagsOf := map[string][]string{
		"ask":    {"agent", "choice", "command", "form", "hook", "json", "line", "rationale", "socket", "timeout", "title", "tool", "tool-call", "yes-no"},
		"grants": {"agent", "json", "name", "revoke", "revoke-all", "socket"},
	}
	for cmd, run := range map[string]func(context.Context, []string, Env) error{"ask": Run, "grants": Grants} {
		var out bytes.Buffer
		e := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }, Prog: "collie " + cmd}
		if err := run(context.Background(), []string{"--help"}, e); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		_, section, ok := strings.Cut(out.String(), "\nFlags:\n")
		if !ok {
			t.Errorf("%s --help has no Flags section:\n%s", cmd, out.String())
			continue
		}
		lines := strings.Split(strings.TrimSuffix(section, "\n"), "\n")
		want := append(flagsOf[cmd], "-h, --help")
		if len(lines) != len(want) {
			t.Errorf("%s --help lists %d flags; want %d:\n%s", cmd, len(lines), len(want), section)
			continue
		}
		for i, l := range lines {
			name := "--" + want[i]
			if want[i] == "-h, --help" {
				name = want[i]
			}
			if !regexp.MustCompile(`^  ` + regexp.QuoteMeta(name) + `( [A-Z=_]+)?\s{2,}\S`).MatchString(l) {
				t.Errorf("%s --help line %d is %q; want %s and what it does", cmd, i, l, name)
			}
		}
	}
}
