package doctor

import (
	"context"
	"errors"
	"syscall"

	"github.com/collie-linux/collie/internal/agent/runrecord"
)

// familyFix is what gives a run more than its process family.
const familyFix = "start collie run in a login session where systemd --user runs, so each run gets a scope of its own (see collie(1), collie run)"

// checkRuns makes one row per collie run in progress: which protection
// keeps its coding agent's tools from answering its questions (a cgroup
// scope, a child cgroup, or the process family alone), and a record left
// by a run that ended without cleaning up. No run, no row.
func checkRuns(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil || e.Paths.Runtime == "" {
		return nil
	}
	dir := runrecord.Dir(e.Paths.Runtime)
	recs, bad, err := runrecord.List(dir)
	if err != nil {
		return []Row{warn("check the folder's permissions: ls -ld "+dir, "the runs in %s cannot be read: %v", dir, clean(err.Error()))}
	}
	var rows []Row
	for _, f := range bad {
		rows = append(rows, warn("rm "+f, "%s is not a record of a run", f))
	}
	for _, r := range recs {
		if !alive(r.PID) {
			fix := "rm " + dir + "/" + r.Name + ".json"
			if r.Attached {
				fix = "collie durable detach " + r.Name + " && " + fix
			}
			rows = append(rows, warn(fix, "the run %s (pid %d) ended without cleaning up", r.Name, r.PID).about(r.Name))
			continue
		}
		what := clean(r.Command) + " in " + clean(r.Folder)
		if r.Sandbox {
			what += " (sandboxed: its tools cannot reach the user manager or the bridge's control socket)"
		}
		switch r.Protection {
		case "cgroup scope":
			rows = append(rows, ok("%s: its tools are refused as answerers by cgroup scope (%s)", what, clean(r.Unit)).about(r.Name))
		case "child cgroup":
			rows = append(rows, ok("%s: its tools are refused as answerers by child cgroup (%s)", what, clean(r.Cgroup)).about(r.Name))
		default:
			rows = append(rows, warn(familyFix, "%s: its tools are refused as answerers by process family only; a tool the user manager starts is not told apart", what).about(r.Name))
		}
	}
	return rows
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := killZero(pid)
	return err == nil || errors.Is(err, syscall.EPERM)
}
