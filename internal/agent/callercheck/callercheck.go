// Package callercheck is the durable agent's caller check (spec C2, C3):
// before a write, find out which process is at the other end of the Unix
// socket and refuse it when it is the agent itself, a process the agent
// started, or a process the agent cannot tell apart from those.
//
// The caller is the process that connected. Linux records it on the socket
// (SO_PEERCRED, read through SyscallConn().Control so the runtime keeps the
// only handle on the descriptor) and, since 6.5, hands out a pidfd for it
// (SO_PEERPIDFD). The pidfd pins the process: its pid cannot be given to
// another process while the check runs, so a caller that exits and has its
// pid reused cannot borrow another process's ancestry. Where the kernel is
// older, or gives no pidfd for a caller that has exited, the check opens a
// pidfd itself (pidfd_open), which pins whatever process has the pid by
// then; without pidfds at all (before 5.3) it compares the process's start
// time before and after reading /proc. Either way the process judged must
// have started no later than the connection was accepted (its start time in
// /proc/PID/stat, field 22, against CLOCK_BOOTTIME taken at accept by
// Listener, to the 10 ms of a clock tick): one that started later took the
// pid of a caller that exited (C3). The same holds up the parent walk: each
// parent is read by pid with a pidfd held across the read, and must have
// started no later than its child; otherwise the link counts as broken.
//
// A caller is refused when
//
//   - its pid is 0 (it sits in a pid namespace the agent cannot see into)
//     or it runs as another user;
//   - it is the agent;
//   - the agent is among its ancestors (parent links read from
//     /proc/PID/stat, where the command name may hold spaces and ')');
//   - it sits in the agent's cgroup or below it. systemd --user is a
//     subreaper: a tool that double-forks is re-parented to the user
//     manager and drops out of the agent's ancestry, but it stays in the
//     agent unit's cgroup, which it cannot leave unless it can write to the
//     user's cgroup tree (see the README's security section);
//   - anything needed for the answer cannot be read (/proc unreadable, the
//     agent in the root cgroup, where every process of the machine sits),
//     or the process is gone (or a zombie) before the check ends;
//   - without SO_PEERPIDFD: the process with its pid started after the
//     connection was accepted, or the connection did not come through
//     Listener, so the time of its accept is not known.
//
// Reads are not checked: anything that reached the socket may read.
package callercheck

import (
	"bytes"
	"errors"
	"fmt"
)

// Caller is what the check found out about the process that connected.
type Caller struct {
	PID    int
	UID    uint32
	Cgroup string // its cgroup in the hierarchy the check uses
	// Method says how the process was pinned: "SO_PEERPIDFD",
	// "pidfd_open" or "start time".
	Method string
}

// Refused is the error of a refused caller. Reason is a sentence that
// says why and what to do.
type Refused struct {
	Caller Caller
	Reason string
}

func (r *Refused) Error() string { return r.Reason }

// ErrUnsupported is returned by New where the check cannot work.
var ErrUnsupported = errors.New("the caller check is not available")

// answerElsewhere ends every refusal of a descendant: the fix is to answer
// from the device, not to change the agent.
const answerElsewhere = "the agent takes answers and other writes only from processes it did not start; answer from a paired device"

func refuse(who Caller, format string, a ...any) error {
	return &Refused{Caller: who, Reason: fmt.Sprintf(format, a...)}
}

// Hierarchies the check can use, in order of preference: the cgroup2
// (unified) hierarchy, and on legacy systems systemd's own v1 hierarchy.
const (
	hierUnified = ""
	hierSystemd = "name=systemd"
)

// parseCgroup returns the path of hierarchy hier in the content of
// /proc/PID/cgroup ("ID:CONTROLLERS:PATH" lines; the unified hierarchy is
// "0::PATH"), and whether it was there.
func parseCgroup(b []byte, hier string) (string, bool) {
	for len(b) > 0 {
		line := b
		if j := bytes.IndexByte(b, '\n'); j >= 0 {
			line, b = b[:j], b[j+1:]
		} else {
			b = nil
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		rest := line[i+1:]
		j := bytes.IndexByte(rest, ':')
		if j < 0 {
			continue
		}
		id, ctrl, path := line[:i], rest[:j], rest[j+1:]
		switch hier {
		case hierUnified:
			if string(id) == "0" && len(ctrl) == 0 {
				return string(path), true
			}
		default:
			if string(ctrl) == hier {
				return string(path), true
			}
		}
	}
	return "", false
}

// chooseHierarchy picks the hierarchy that tells the agent's unit apart,
// from the content of /proc/self/cgroup: the unified one unless the agent
// sits at its root (legacy mode, or a machine where nothing manages
// cgroups), then systemd's. ok is false when neither tells anything apart.
func chooseHierarchy(self []byte) (hier, path string, ok bool) {
	if p, found := parseCgroup(self, hierUnified); found && p != "/" && p != "" {
		return hierUnified, p, true
	}
	if p, found := parseCgroup(self, hierSystemd); found && p != "/" && p != "" {
		return hierSystemd, p, true
	}
	return "", "", false
}

// within reports whether cgroup path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/'
}
