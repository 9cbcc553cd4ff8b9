package callercheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/linux/procstat"
	"golang.org/x/sys/unix"
)

// userHZ is the unit of the start times in /proc/PID/stat: clock ticks of
// USER_HZ, which is 100 on every Linux (sysconf(_SC_CLK_TCK)).
const userHZ = 100

// bootTime returns the time since boot, CLOCK_BOOTTIME: the clock of the
// start times in /proc/PID/stat (in the reader's time namespace, as both are).
func bootTime() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// startedAfter reports whether a process that started at start (clock ticks
// since boot) surely started after at: in a later tick. Within the tick of
// at it cannot tell, and lets it be: reusing a pid within 10 ms of the
// accept would take the whole pid space going round in that time.
func startedAfter(start uint64, at time.Duration) bool {
	return start > uint64(at/(time.Second/userHZ))
}

// Checker checks callers for one agent process.
type Checker struct {
	selfPID int
	uid     uint32
	proc    string // where procfs is mounted: "/proc"
	hier    string // the cgroup hierarchy used, see chooseHierarchy
	cgroup  string // the agent's cgroup in it; "" when none tells it apart

	// familyOnly judges callers by their ancestry alone (NewFamily).
	familyOnly bool

	// Test knobs: pretend the kernel lacks SO_PEERPIDFD, PIDFD_GET_INFO,
	// or pidfds.
	noPeerPidfd, noPidfdInfo, noPidfd bool
}

// New returns the check for this process. It fails when /proc does not
// show this process as itself (procfs of another pid namespace), which
// would make every answer wrong.
func New() (*Checker, error) {
	c := &Checker{selfPID: os.Getpid(), uid: uint32(os.Getuid()), proc: "/proc"}
	var buf [1024]byte
	b, err := readSmall(c.proc+"/self/stat", buf[:])
	if err != nil {
		return nil, fmt.Errorf("%w: read /proc/self/stat: %v; mount procfs at /proc, or set CallerCheck = \"off\"", ErrUnsupported, err)
	}
	if f := bytes.Fields(b); len(f) == 0 || string(f[0]) != strconv.Itoa(c.selfPID) {
		return nil, fmt.Errorf("%w: /proc shows another pid namespace than the agent's; mount the agent's own procfs at /proc, or set CallerCheck = \"off\"", ErrUnsupported)
	}
	var cbuf [4096]byte
	cg, err := readSmall(c.proc+"/self/cgroup", cbuf[:])
	if err != nil {
		return nil, fmt.Errorf("%w: read /proc/self/cgroup: %v", ErrUnsupported, err)
	}
	if hier, path, ok := chooseHierarchy(cg); ok {
		c.hier, c.cgroup = hier, path
	}
	return c, nil
}

// NewFamily returns a check that refuses the agent and its descendants
// but does not judge callers by their cgroup: for an agent that could
// get no cgroup of its own, whose cgroup holds processes it did not
// start (a login session's scope, a container's root). A tool that
// double-forks leaves the agent's family unless the agent is the child
// subreaper of its descendants (PR_SET_CHILD_SUBREAPER), which collie run
// is. Cgroup returns "" for it.
func NewFamily() (*Checker, error) {
	c, err := New()
	if err != nil {
		return nil, err
	}
	c.hier, c.cgroup, c.familyOnly = "", "", true
	return c, nil
}

// FamilyOnly reports whether the check judges callers by ancestry alone.
func (c *Checker) FamilyOnly() bool { return c.familyOnly }

// Cgroup returns the agent's cgroup as the check sees it, or "" when the
// agent sits in a root cgroup: then every write is refused, because a tool
// the agent started and re-parented cannot be told apart from any other
// process. Run the agent as a systemd unit to give it a cgroup of its own.
func (c *Checker) Cgroup() string { return c.cgroup }

// PeerPidfd reports whether the kernel pins callers with SO_PEERPIDFD.
func (c *Checker) PeerPidfd() bool {
	if c.noPeerPidfd {
		return false
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	pidfd, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	if err != nil {
		return false
	}
	unix.Close(pidfd)
	return true
}

// Check returns the caller at the other end of conn, a connected Unix
// stream socket, or a *Refused saying why it may not write.
func (c *Checker) Check(conn syscall.Conn) (Caller, error) {
	var (
		cred   *unix.Ucred
		pidfd  = -1
		cerr   error
		method string
	)
	rc, err := conn.SyscallConn()
	if err != nil {
		return Caller{}, refuse(Caller{}, "the agent cannot read who is calling (%v); %s", err, answerElsewhere)
	}
	err = rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr != nil || c.noPeerPidfd {
			return
		}
		if p, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
			pidfd, method = p, "SO_PEERPIDFD"
		}
	})
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	if err == nil {
		err = cerr
	}
	if err != nil {
		return Caller{}, refuse(Caller{}, "the agent cannot read who is calling (SO_PEERCRED: %v); %s", err, answerElsewhere)
	}
	who := Caller{PID: int(cred.Pid), UID: cred.Uid}
	switch {
	case cred.Pid <= 0:
		return who, refuse(who, "the caller has no process id the agent can see (it runs in another pid namespace), so the agent cannot tell whether it started it; %s", answerElsewhere)
	case cred.Uid != c.uid:
		return who, refuse(who, "the caller runs as user %d, not as the agent's user %d; write as the agent's user, from a paired device", cred.Uid, c.uid)
	case who.PID == c.selfPID:
		return who, refuse(who, "the caller is the agent itself; %s", answerElsewhere)
	}
	if pidfd < 0 && !c.noPidfd {
		if p, err := unix.PidfdOpen(who.PID, 0); err == nil {
			pidfd, method = p, "pidfd_open"
			defer unix.Close(pidfd)
		} else if errors.Is(err, unix.ESRCH) {
			return who, c.gone(who)
		}
	}
	if pidfd < 0 {
		method = "start time"
	}
	who.Method = method
	// Only SO_PEERPIDFD pins the process that connected. A pidfd opened by
	// pid, or no pidfd at all, names whatever process has the pid now: the
	// caller, or one that took its pid after it exited. That one started
	// after the connection was accepted (C3).
	var accepted time.Duration
	pinnedAtConnect := method == "SO_PEERPIDFD"
	if a, ok := conn.(acceptedConn); ok {
		accepted = a.Accepted()
	}
	if !pinnedAtConnect && accepted <= 0 {
		return who, refuse(who, "the kernel gave no pidfd for the caller (SO_PEERPIDFD) and the agent does not know when the connection was accepted, so it cannot tell the caller from a process that took its pid; serve the socket through callercheck.Listener; %s", answerElsewhere)
	}

	// The caller's parent: from the pidfd itself where the kernel answers
	// PIDFD_GET_INFO (6.13), otherwise from /proc once the pidfd is known
	// to name the caller's pid.
	var (
		buf  [4096]byte
		st   procstat.Stat
		info *unix.PidfdInfo
	)
	if pidfd >= 0 && !c.noPidfdInfo {
		info = &unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
		switch err := unix.IoctlPidfdInfo(pidfd, info); {
		case err == nil:
		case errors.Is(err, unix.ESRCH):
			return who, c.gone(who)
		default: // ENOTTY, EINVAL: an older kernel
			info = nil
		}
	}
	switch {
	case info != nil && info.Mask&unix.PIDFD_INFO_PID != 0:
		if int(info.Tgid) != who.PID {
			return who, refuse(who, "the caller's pidfd names process %d, not %d, so the agent cannot tell who it is; %s", info.Tgid, who.PID, answerElsewhere)
		}
		// The start time is only in /proc; the parent is the pidfd's.
		var err error
		if st, err = c.stat(who.PID, buf[:]); err != nil {
			return who, c.unreadable(who, err, pidfd)
		}
		if st.State == 'Z' || st.State == 'X' {
			return who, c.gone(who)
		}
		st.PPID = int(info.Ppid)
	default:
		if pidfd >= 0 {
			switch p, err := c.pidfdPID(pidfd); {
			case err != nil:
				return who, refuse(who, "the agent cannot read its caller's pidfd (%v); %s", err, answerElsewhere)
			case p == -1:
				return who, c.gone(who)
			case p != who.PID:
				return who, refuse(who, "the caller's pidfd names process %d, not %d, so the agent cannot tell who it is; %s", p, who.PID, answerElsewhere)
			}
		}
		var err error
		if st, err = c.stat(who.PID, buf[:]); err != nil {
			return who, c.unreadable(who, err, pidfd)
		}
		if st.State == 'Z' || st.State == 'X' {
			return who, c.gone(who)
		}
	}
	if !pinnedAtConnect && startedAfter(st.StartTime, accepted) {
		return who, refuse(who, "the process that has the caller's pid (%d) started after the connection was accepted, so it is not the caller: the caller exited and its pid was taken; %s", who.PID, answerElsewhere)
	}
	if err := c.walk(who, st, pidfd, buf[:]); err != nil {
		return who, err
	}
	if c.familyOnly {
		return who, c.still(who, pidfd, info != nil, st, buf[:])
	}
	if c.cgroup == "" {
		return who, refuse(who, "the agent runs in a root cgroup, where it cannot tell the tools it started from other processes; run it as a systemd unit (collie-agent@NAME.service), or set CallerCheck = \"off\"")
	}
	cg, err := readSmall(c.proc+"/"+strconv.Itoa(who.PID)+"/cgroup", buf[:])
	if err != nil {
		return who, c.unreadable(who, err, pidfd)
	}
	path, ok := parseCgroup(cg, c.hier)
	if !ok {
		return who, refuse(who, "the caller's cgroup cannot be read, so the agent cannot tell whether it started it; %s", answerElsewhere)
	}
	who.Cgroup = path
	if within(path, c.cgroup) {
		return who, refuse(who, "the caller (pid %d) runs in the agent's own cgroup %s, where the programs the agent starts run; %s", who.PID, c.cgroup, answerElsewhere)
	}

	return who, c.still(who, pidfd, info != nil, st, buf[:])
}

// still returns nil when the caller's pid still names the process judged:
// the data read was the caller's only if it does (a zombie's pid is not
// reused either, but a zombie is no caller).
func (c *Checker) still(who Caller, pidfd int, hasInfo bool, st procstat.Stat, buf []byte) error {
	if pidfd >= 0 {
		again := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
		if hasInfo {
			if unix.IoctlPidfdInfo(pidfd, &again) != nil {
				return c.gone(who)
			}
		} else if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return c.gone(who)
		}
	} else if again, err := c.stat(who.PID, buf); err != nil || again.StartTime != st.StartTime || again.State == 'Z' {
		return c.gone(who)
	}
	return nil
}

// walk follows the parent links from the caller (whose stat is caller) up
// to the top and refuses the caller when the agent is among them. A link
// that breaks during the walk (a parent exited, so its children were
// re-parented) restarts it, a few times.
//
// Each parent is read by pid, so each is pinned while it is read: a pidfd
// opened before the read and still alive after it shows that the pid named
// one process throughout, and that process must have started no later than
// the child that names it as parent. A parent that exited during the walk
// and whose pid another process took fails one or the other, which breaks
// the link rather than judging the other process's parents.
func (c *Checker) walk(who Caller, caller procstat.Stat, pidfd int, buf []byte) error {
	ppid, childStart := caller.PPID, caller.StartTime
	for attempt := 0; attempt < 3; attempt++ {
		p, start, broken := ppid, childStart, false
		for steps := 0; steps < 4096; steps++ {
			if p == c.selfPID {
				return refuse(who, "the caller (pid %d) was started by the agent (it is one of the agent's descendants); %s", who.PID, answerElsewhere)
			}
			if p <= 1 {
				break
			}
			st, ok, err := c.parent(p, start, buf)
			if err != nil {
				return c.unreadable(who, err, -1)
			}
			if !ok {
				broken = true
				break
			}
			p, start = st.PPID, st.StartTime
		}
		if !broken {
			return nil
		}
		// Read the caller's parent again: it was re-parented.
		st, err := c.stat(who.PID, buf)
		if err != nil {
			return c.unreadable(who, err, pidfd)
		}
		ppid, childStart = st.PPID, st.StartTime
	}
	return refuse(who, "the caller's parents kept changing while the agent checked them, so it cannot tell whether it started the caller; %s", answerElsewhere)
}

// parent reads /proc/p/stat for the parent p of a child that started at
// childStart, pinning p while it reads. ok is false when the link is
// broken: p exited, or the process now at p started after the child, so it
// took the pid of the child's parent.
func (c *Checker) parent(p int, childStart uint64, buf []byte) (st procstat.Stat, ok bool, err error) {
	pfd := -1
	if !c.noPidfd {
		switch fd, err := unix.PidfdOpen(p, 0); {
		case err == nil:
			pfd = fd
			defer unix.Close(pfd)
		case errors.Is(err, unix.ESRCH):
			return procstat.Stat{}, false, nil
		}
	}
	st, err = c.stat(p, buf)
	if errors.Is(err, os.ErrNotExist) {
		return procstat.Stat{}, false, nil
	}
	if err != nil {
		return procstat.Stat{}, false, err
	}
	// Signal 0 only asks whether the process is still there; EPERM (a
	// parent of another user, such as sudo) says it is.
	if pfd >= 0 && errors.Is(unix.PidfdSendSignal(pfd, 0, nil, 0), unix.ESRCH) {
		return procstat.Stat{}, false, nil // exited while read: the stat may be another's
	}
	if st.StartTime > childStart {
		return procstat.Stat{}, false, nil
	}
	return st, true, nil
}

func (c *Checker) stat(pid int, buf []byte) (procstat.Stat, error) {
	b, err := readSmall(c.proc+"/"+strconv.Itoa(pid)+"/stat", buf)
	if err != nil {
		return procstat.Stat{}, err
	}
	st, err := procstat.Parse(b)
	if err != nil {
		return procstat.Stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// pidfdPID reads the pid a pidfd refers to from its fdinfo: -1 once the
// process has exited, 0 when it is outside this pid namespace.
func (c *Checker) pidfdPID(pidfd int) (int, error) {
	var buf [512]byte
	b, err := readSmall(c.proc+"/self/fdinfo/"+strconv.Itoa(pidfd), buf[:])
	if err != nil {
		return 0, err
	}
	i := bytes.Index(b, []byte("\nPid:"))
	if i < 0 {
		return 0, errors.New("no Pid line")
	}
	line := b[i+5:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return strconv.Atoi(string(bytes.TrimSpace(line)))
}

func (c *Checker) gone(who Caller) error {
	return refuse(who, "the caller (pid %d) exited before the agent finished checking it, so the agent cannot tell who it was; %s", who.PID, answerElsewhere)
}

// unreadable refuses a caller whose /proc entries could not be read. A
// missing entry means the process is gone, unless its pidfd says it is
// alive: then /proc is not showing what the agent expects.
func (c *Checker) unreadable(who Caller, err error, pidfd int) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		if pidfd < 0 || unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil {
			return c.gone(who)
		}
	}
	return refuse(who, "the agent cannot read its caller in /proc (%v), so it cannot tell whether it started it; mount /proc without hidepid for the agent's user, or answer from a paired device", err)
}

// readSmall reads a small procfs file into buf without allocating. procfs
// hands over a whole small file in one read, so a read that leaves room in
// buf is taken as the end: this saves a syscall per file, and the check
// reads several files on every write.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		n += m
		if m == 0 || n < len(buf) {
			break
		}
	}
	if n == len(buf) {
		return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("longer than the agent expects")}
	}
	return buf[:n], nil
}
