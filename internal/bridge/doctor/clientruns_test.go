package doctor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/runrecord"
	"github.com/collie-linux/collie/internal/bridge/config"
)

// TestClientRunRows_C2: each installed coding agent has a row saying
// whether it runs under collie run now, and with which protection (the
// caller check refuses its tools' answers, C2): a client process that
// descends from a live run is named with the run and its protection
// (scope, cgroup, family, sandbox), one outside every run is a warning
// whose fix is collie run, and a client that is not running says how to
// start it.
func TestClientRunRows_C2(t *testing.T) {
	self := os.Getpid() // collie run's pid in the records: alive
	dead := deadPID(t)
	const outsider = 1_000_001
	for _, tc := range []struct {
		name      string
		installed string
		records   []runrecord.Record
		procs     []Proc
		procsErr  error
		want      Status
		has       []string
		fix       string
	}{
		{name: "claude under a scope", installed: "claude",
			records: []runrecord.Record{{Name: "a", PID: self, Command: "claude", Folder: "/w", Protection: "cgroup scope", Unit: "collie-run-a-1.scope"}},
			procs:   []Proc{{PID: self, PPID: 1, Argv: []string{"collie", "run", "--", "claude"}}, {PID: 500, PPID: self, Argv: []string{"claude", "-c"}}},
			want:    OK, has: []string{"Claude Code runs under collie run", "pid 500 in the run a (cgroup scope collie-run-a-1.scope)"}},
		{name: "claude outside every run", installed: "claude",
			procs: []Proc{{PID: outsider, PPID: 1, Argv: []string{"/opt/npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe"}}},
			want:  Warn, has: []string{"Claude Code runs outside collie run (pid 1000001)", "can answer its own questions"}, fix: "quit it and start it again as collie run -- claude"},
		{name: "claude in a run of a shell, and outside", installed: "claude",
			records: []runrecord.Record{{Name: "sh", PID: self, Command: "bash", Folder: "/w", Protection: "process family"}},
			procs: []Proc{{PID: self, PPID: 1, Argv: []string{"collie", "run", "--", "bash"}}, {PID: 600, PPID: self, Argv: []string{"bash"}},
				{PID: 601, PPID: 600, Argv: []string{"claude"}}, {PID: outsider, PPID: 1, Argv: []string{"claude"}}},
			want: Warn, has: []string{"outside collie run (pid 1000001)", "under collie run: pid 601 in the run sh (process family only)"}},
		{name: "gemini, a node script, sandboxed in a child cgroup", installed: "gemini",
			records: []runrecord.Record{{Name: "g", PID: self, Command: "gemini", Folder: "/w", Protection: "child cgroup", Cgroup: "/collie-run-g-1", Sandbox: true}},
			procs: []Proc{{PID: self, PPID: 1, Argv: []string{"collie"}}, {PID: 700, PPID: self, Argv: []string{"bwrap", "--", "gemini"}},
				{PID: 701, PPID: 700, Argv: []string{"node", "/usr/bin/gemini", "-p", "x"}}},
			want: OK, has: []string{"pid 701 in the run g (child cgroup /collie-run-g-1, sandboxed)"}},
		{name: "codex's wrapper and its binary count once", installed: "codex",
			procs: []Proc{{PID: 800, PPID: 1, Argv: []string{"/usr/bin/node", "/opt/npm/node_modules/@openai/codex/bin/codex.js"}}, {PID: 801, PPID: 800, Argv: []string{"/usr/lib/codex/bin/codex", "exec"}}},
			want:  Warn, has: []string{"Codex runs outside collie run (pid 800):"}, fix: "quit it and start it again as collie run -- codex"},
		{name: "a run of claude whose process is not seen", installed: "claude",
			records: []runrecord.Record{{Name: "b", PID: self, Command: "claude", Folder: "/srv/app", Protection: "cgroup scope", Unit: "u.scope"}},
			want:    OK, has: []string{"the run b in /srv/app (cgroup scope u.scope)"}},
		{name: "a dead run is not a run", installed: "claude",
			records: []runrecord.Record{{Name: "d", PID: dead, Command: "claude", Folder: "/w", Protection: "cgroup scope"}},
			want:    OK, has: []string{"Claude Code is not running now; start it as collie run -- claude"}},
		{name: "claude not running", installed: "claude",
			procs: []Proc{{PID: 900, PPID: 1, Argv: []string{"vim", "claude"}}, {PID: 901, PPID: 1, Argv: []string{"collie", "ask", "--hook", "claude"}}},
			want:  OK, has: []string{"is not running now"}},
		{name: "the processes cannot be listed", installed: "claude", procsErr: errors.New("cannot list the processes: no /proc"),
			want: OK, has: []string{"cannot tell whether Claude Code runs under collie run (cannot list the processes: no /proc)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			for _, r := range tc.records {
				r.Started = time.Unix(0, 0)
				if err := runrecord.Write(runrecord.Dir(run), r); err != nil {
					t.Fatal(err)
				}
			}
			c := &Clients{Home: "/home/u", Getenv: func(string) string { return "" },
				LookPath: func(f string) (string, error) {
					if f == tc.installed {
						return "/usr/bin/" + f, nil
					}
					return "", fs.ErrNotExist
				},
				ReadFile:   func(string) ([]byte, error) { return nil, fs.ErrNotExist },
				Executable: func(string) bool { return true },
				Procs:      func() ([]Proc, error) { return tc.procs, tc.procsErr },
			}
			rows := checkCodingAgents(context.Background(), &Env{Paths: config.Paths{Runtime: run}, Clients: c})
			var got []Row
			for _, r := range rows {
				if strings.HasSuffix(r.Subject, " under collie run") {
					got = append(got, r)
				}
			}
			if len(got) != 1 {
				t.Fatalf("rows under collie run: %+v", rows)
			}
			r := got[0]
			if r.Status != tc.want || !strings.HasPrefix(r.Fix, tc.fix) || r.Status != OK && r.Fix == "" {
				t.Errorf("row %+v, want %s with fix %q", r, tc.want, tc.fix)
			}
			for _, h := range tc.has {
				if !strings.Contains(r.Message, h) {
					t.Errorf("message %q lacks %q", r.Message, h)
				}
			}
		})
	}
}

// TestClientRunRows_NoProcs: without a way to list processes (the other
// checks' tests) there is no such row.
func TestClientRunRows_NoProcs(t *testing.T) {
	c := &Clients{Home: "/home/u", Getenv: func(string) string { return "" },
		LookPath:   func(f string) (string, error) { return "/usr/bin/" + f, nil },
		ReadFile:   func(string) ([]byte, error) { return nil, fs.ErrNotExist },
		Executable: func(string) bool { return true },
	}
	for _, r := range checkCodingAgents(context.Background(), &Env{Clients: c}) {
		if strings.HasSuffix(r.Subject, " under collie run") {
			t.Errorf("row %+v", r)
		}
	}
}
