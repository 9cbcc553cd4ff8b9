package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/runrecord"
	"github.com/collie-linux/collie/internal/bridge/config"
)

// TestRunsRow_C2: one row per collie run in progress, naming the
// protection that keeps its tools from answering (C2); the process family
// alone is a warning; a record left by a run that died says how to clean
// it up; no run, no row.
func TestRunsRow_C2(t *testing.T) {
	run := t.TempDir()
	e := &Env{Paths: config.Paths{Runtime: run}}
	if rows := run1(t, e); len(rows) != 0 {
		t.Fatalf("rows with no run: %+v", rows)
	}
	dir := runrecord.Dir(run)
	self := os.Getpid()
	dead := deadPID(t)
	for _, r := range []runrecord.Record{
		{Name: "a-scope", PID: self, Command: "claude", Folder: "/home/u/app", Protection: "cgroup scope", Unit: "collie-run-a-scope-1.scope"},
		{Name: "b-cgroup", PID: self, Command: "codex", Folder: "/srv/x", Protection: "child cgroup", Cgroup: "/collie-run-b-1"},
		{Name: "c-family", PID: self, Command: "gemini", Folder: "/w", Protection: "process family"},
		{Name: "d-dead", PID: dead, Command: "claude", Folder: "/w", Protection: "cgroup scope", Attached: true},
	} {
		r.Started = time.Unix(0, 0)
		if err := runrecord.Write(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "junk.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := run1(t, e)
	want := []struct {
		subject string
		status  Status
		has     string
	}{
		{"", Warn, "junk.json is not a record of a run"},
		{"a-scope", OK, "claude in /home/u/app: its tools are refused as answerers by cgroup scope (collie-run-a-scope-1.scope)"},
		{"b-cgroup", OK, "by child cgroup (/collie-run-b-1)"},
		{"c-family", Warn, "by process family only"},
		{"d-dead", Warn, "ended without cleaning up"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows: %+v", rows)
	}
	for i, w := range want {
		r := rows[i]
		if r.Subject != w.subject || r.Status != w.status || !strings.Contains(r.Message, w.has) || r.Status != OK && r.Fix == "" {
			t.Errorf("row %d: %+v, want %s %s %q", i, r, w.subject, w.status, w.has)
		}
	}
	if fix := rows[4].Fix; !strings.HasPrefix(fix, "collie durable detach d-dead && rm ") {
		t.Errorf("the dead run's fix: %q", fix)
	}
}

func run1(t *testing.T, e *Env) []Row {
	t.Helper()
	rows, err := Run(context.Background(), e, "runs")
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// deadPID is the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}
