package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandHelp_L4: --help and -h of every command of
// collie-agent's table exit 0 with its usage on stdout and flags as
// --flag; a bad flag is said once and exits 2 (issue 10 item 8).
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
