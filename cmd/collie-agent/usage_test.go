package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandHelp_L4: --help and -h of every command of
// collie-agent's table exit 0 with its usage on stdout and flags as
// --flag; a bad flag is said once and exits 2.
func TestEveryCommandHelp_L4(t *testing.T) {
	singleDash := regexp.MustCompile(`(?m)^\s+-[a-gi-z]|[\s\[]-[a-z][a-z-]+\b`)
	for _, c := range commands() {
		prog := strings.TrimSpace("collie-agent " + c.name)
		for _, h := range []string{"--help", "-h"} {
			var out, errOut strings.Builder
			code := run(append(strings.Fields(c.name), h), &out, &errOut)
			if code != 0 || errOut.Len() != 0 || !strings.HasPrefix(out.String(), "Usage: "+prog) {
				t.Errorf("%s %s: exit %d, stderr %q, stdout %q", prog, h, code, errOut.String(), out.String())
			}
			if m := singleDash.FindString(out.String()); m != "" {
				t.Errorf("%s %s: a flag in -flag form (%q):\n%s", prog, h, m, out.String())
			}
		}
		var out, errOut strings.Builder
		code := run(append(strings.Fields(c.name), "--no-such-flag"), &out, &errOut)
		want := "collie-agent: error: flag provided but not defined: --no-such-flag\ncollie-agent: hint: see " + prog + " --help\n"
		if code != 2 || out.Len() != 0 || errOut.String() != want {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want 2 and %q", prog, code, out.String(), errOut.String(), want)
		}
	}
}

// TestUsageScriptWalksEveryCommand_L4: cmd/collie's usage.txtar runs
// --help and -h of every command of collie-agent's table too.
func TestUsageScriptWalksEveryCommand_L4(t *testing.T) {
	b, err := os.ReadFile("../collie/testdata/script/usage.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands() {
		for _, h := range []string{"--help", "-h"} {
			line := strings.Join(strings.Fields("exec collie-agent "+c.name+" "+h), " ") + "\n"
			if !strings.Contains(string(b), line) {
				t.Errorf("usage.txtar lacks %q", strings.TrimSpace(line))
			}
		}
	}
}

// TestUnknownCommandDidYouMean_L4: a word near one of collie-agent's
// commands, or a flag near one of its flags, says which was meant.
func TestUnknownCommandDidYouMean_L4(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"grantz"}, `collie-agent: error: unexpected argument "grantz"; did you mean collie-agent grants?`},
		{[]string{"aks", "--yes-no", "T"}, `collie-agent: error: unexpected argument "aks"; did you mean collie-agent ask?`},
		{[]string{"--check-confg"}, `collie-agent: error: flag provided but not defined: --check-confg; did you mean --check-config?`},
		{[]string{"grants", "--revok", "x"}, `collie-agent: error: flag provided but not defined: --revok; did you mean --revoke?`},
	} {
		var out, errOut strings.Builder
		code := run(tt.args, &out, &errOut)
		if code != 2 || out.Len() != 0 || !strings.HasPrefix(errOut.String(), tt.want+"\n") {
			t.Errorf("collie-agent %q: exit %d, stdout %q, stderr %q; want 2 and %q", tt.args, code, out.String(), errOut.String(), tt.want)
		}
	}
}

// TestHelpAndVersionExitZero_L4: collie-agent help and collie-agent
// version are commands, as collie's are: usage or version on stdout,
// nothing on stderr, exit 0; an argument after them is a mistake (2).
func TestHelpAndVersionExitZero_L4(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"help"}, 0, `^Usage: collie-agent \[--name NAME\]`},
		{[]string{"version"}, 0, `^collie-agent \S+\n$`},
		{[]string{"--version"}, 0, `^collie-agent \S+\n$`},
		{[]string{"help", "extra"}, 2, `^$`},
		{[]string{"version", "extra"}, 2, `^$`},
	} {
		var out, errOut strings.Builder
		code := run(tt.args, &out, &errOut)
		if code != tt.code || !regexp.MustCompile(tt.want).MatchString(out.String()) || (code == 0) != (errOut.Len() == 0) {
			t.Errorf("collie-agent %q: exit %d, stdout %q, stderr %q; want %d and %s", tt.args, code, out.String(), errOut.String(), tt.code, tt.want)
		}
	}
}
