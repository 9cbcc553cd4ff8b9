package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/runrecord"
	"github.com/collie-linux/collie/internal/linux/procstat"
)

// Proc is a process of the user: its id, its parent's, and its command
// line.
type Proc struct {
	PID, PPID int
	Argv      []string
}

// interpreter reports whether prog runs a client's script, whose name is
// then the client's.
func interpreter(prog string) bool {
	switch prog {
	case "node", "nodejs", "bun", "deno":
		return true
	}
	return false
}

// runsClient reports whether p is the client named name: its program, or
// the script an interpreter runs (npm installs Gemini CLI and the Codex
// wrapper as node scripts).
func (p Proc) runsClient(name string) bool {
	if len(p.Argv) == 0 {
		return false
	}
	if programName(p.Argv[0]) == name {
		return true
	}
	return len(p.Argv) > 1 && interpreter(filepath.Base(p.Argv[0])) && programName(p.Argv[1]) == name
}

// programName is a program's or script's base name without the suffix
// npm's packages give it (claude.exe, codex.js).
func programName(path string) string {
	base := filepath.Base(path)
	for _, suffix := range []string{".exe", ".js", ".mjs", ".cjs"} {
		base = strings.TrimSuffix(base, suffix)
	}
	return base
}

// runRow says whether the client h runs under collie run now: each
// process of the client and the run it descends from, with the run's
// protection; a process outside every run is a warning (its tools can
// answer its own questions over the agent's socket). No process: whether
// a run of it is recorded, else how to start one. ok is false when the
// processes cannot be listed here (no row).
func (c *Clients) runRow(e *Env, h *ask.HookClient) (Row, bool) {
	if c.Procs == nil {
		return Row{}, false
	}
	start := fmt.Sprintf("collie run -- %s", h.Name)
	procs, err := c.Procs()
	if err != nil {
		return ok("cannot tell whether %s runs under collie run (%v); start it as %s so its tools cannot answer its questions", h.Label, clean(err.Error()), start), true
	}
	var recs []runrecord.Record
	if e.PathsErr == nil && e.Paths.Runtime != "" {
		all, _, _ := runrecord.List(runrecord.Dir(e.Paths.Runtime)) // the runs row says what is wrong with the folder
		for _, r := range all {
			if alive(r.PID) {
				recs = append(recs, r)
			}
		}
	}
	byPID := map[int]Proc{}
	for _, p := range procs {
		byPID[p.PID] = p
	}
	// ancestor reports whether pid or one of its ancestors is one (is);
	// the walk stops at init and at a loop.
	ancestor := func(pid int, is func(int) bool) bool {
		for seen := 0; pid > 1 && seen <= len(procs); seen++ {
			if is(pid) {
				return true
			}
			pid = byPID[pid].PPID
		}
		return false
	}
	runOf := func(pid int) *runrecord.Record {
		var run *runrecord.Record
		ancestor(pid, func(p int) bool {
			for i := range recs {
				if recs[i].PID == p {
					run = &recs[i]
					return true
				}
			}
			return false
		})
		return run
	}
	isClient := func(pid int) bool {
		p, found := byPID[pid]
		return found && p.runsClient(h.Name)
	}
	var under, outside []string
	seenRun := map[string]bool{}
	for _, p := range procs {
		if !p.runsClient(h.Name) || ancestor(p.PPID, isClient) {
			continue // a client's own child (the Codex wrapper's binary) counts with its parent
		}
		if r := runOf(p.PID); r != nil {
			under = append(under, fmt.Sprintf("pid %d in the run %s (%s)", p.PID, clean(r.Name), protectionOf(*r)))
			seenRun[r.Name] = true
			continue
		}
		outside = append(outside, strconv.Itoa(p.PID))
	}
	for _, r := range recs {
		if r.Command == h.Name && !seenRun[r.Name] {
			under = append(under, fmt.Sprintf("the run %s in %s (%s)", clean(r.Name), clean(r.Folder), protectionOf(r)))
		}
	}
	switch {
	case len(outside) > 0:
		msg := fmt.Sprintf("%s runs outside collie run (pid %s): its tools can answer its own questions on the agent's socket", h.Label, strings.Join(outside, ", "))
		if len(under) > 0 {
			msg += "; under collie run: " + strings.Join(under, "; ")
		}
		return warn("quit it and start it again as "+start, "%s", msg), true
	case len(under) > 0:
		return ok("%s runs under collie run, so its tools cannot answer its questions: %s", h.Label, strings.Join(under, "; ")), true
	}
	return ok("%s is not running now; start it as %s so its tools cannot answer its questions", h.Label, start), true
}

// protectionOf says which protection a run has, as the runs row does.
func protectionOf(r runrecord.Record) string {
	var s string
	switch r.Protection {
	case "cgroup scope":
		s = "cgroup scope " + clean(r.Unit)
	case "child cgroup":
		s = "child cgroup " + clean(r.Cgroup)
	default:
		s = "process family only"
	}
	if r.Sandbox {
		s += ", sandboxed"
	}
	return s
}

// procsFromSystem lists the processes of this user from /proc.
func procsFromSystem() ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("cannot list the processes: %w", err)
	}
	uid := os.Getuid()
	var procs []Proc
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if info, err := ent.Info(); err != nil || owner(info) != uid {
			continue
		}
		dir := filepath.Join("/proc", ent.Name())
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			continue // it exited
		}
		st, err := procstat.Parse(stat)
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		procs = append(procs, Proc{PID: pid, PPID: st.PPID, Argv: argv})
	}
	return procs, nil
}
