package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"collie": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts pins the command line's behaviour: testdata/script/*.txtar.
func TestScripts(t *testing.T) {
	agentDir := buildAgent(t)
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			e.Setenv("PATH", agentDir+string(os.PathListSeparator)+e.Getenv("PATH"))
			// Short paths: a Unix socket path has a 108-byte limit.
			run, err := os.MkdirTemp("", "cs-")
			if err != nil {
				return err
			}
			e.Defer(func() { os.RemoveAll(run) })
			e.Setenv("XDG_RUNTIME_DIR", run)
			e.Setenv("XDG_CONFIG_HOME", filepath.Join(e.WorkDir, "config"))
			e.Setenv("XDG_STATE_HOME", filepath.Join(e.WorkDir, "state"))
			e.Setenv("HOME", e.WorkDir)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitsock": waitSock,
			"retry":    retry,
			"mode":     mode,
			"exits":    exits,
			"ntfy":     ntfyDouble,
			"notifyd":  notifyd,
		},
	})
}

// buildAgent builds collie-agent for the scripts that run one.
func buildAgent(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir, "../collie-agent")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build collie-agent: %v\n%s", err, out)
	}
	return dir
}

// waitsock PATH: wait up to 10 s until something listens at PATH.
func waitSock(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitsock PATH")
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		c, err := net.Dial("unix", ts.MkAbs(args[0]))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens at %s after 10 s: %v", args[0], err)
		}
	}
}

// retry PATTERN PROGRAM ARGS...: run the program until its stdout matches
// PATTERN (a regexp), for up to 15 s; a poll of the daemon takes a moment.
func retry(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: retry PATTERN PROGRAM [ARGS...]")
	}
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		err := ts.Exec(args[1], args[2:]...)
		out := ts.ReadFile("stdout")
		if err == nil && matches(args[0], out) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not print %q in 15 s; last output:\n%s\n%s", args[1], args[0], out, ts.ReadFile("stderr"))
		}
	}
}

// mode PATH OCTAL: the file's permission bits are OCTAL.
func mode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode PATH OCTAL")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	got := fmt.Sprintf("%04o", fi.Mode().Perm())
	if (got == args[1]) == neg {
		ts.Fatalf("mode of %s is %s; want %s%s", args[0], got, map[bool]string{true: "not "}[neg], args[1])
	}
}

// exits CODE PROGRAM ARGS...: run the program; its exit status is CODE.
// Its stdout and stderr are kept for the commands that follow, as exec's.
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: exits CODE PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d; want %d\nstderr: %s", strings.Join(args[1:], " "), got, want, ts.ReadFile("stderr"))
	}
}

func matches(pattern, s string) bool {
	return regexp.MustCompile("(?m)" + pattern).MatchString(s)
}
