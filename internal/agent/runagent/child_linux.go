package runagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Child is the command a run supervises: the coding agent.
type Child struct {
	Path string   // the program, as exec.LookPath found it
	Argv []string // its arguments, Argv[0] included
	Env  []string
	Dir  string
	// Stdin, Stdout and Stderr are handed over as they are (the
	// terminal stays the child's).
	Stdin, Stdout, Stderr *os.File
	// Sandbox, when set, runs the command under bubblewrap (see Sandbox).
	Sandbox *Sandbox
}

// Sandbox runs the command under bubblewrap with the user's runtime
// folder ($XDG_RUNTIME_DIR) replaced by an empty one that holds only the
// run's socket: the command and its tools see the whole system as it is
// but cannot reach the user manager (its bus and private socket, so no
// systemd-run --user), other agents' sockets, or the bridge's control
// socket. They still reach the run's socket, which its hooks need; the
// caller check keeps them from answering there.
type Sandbox struct {
	Bwrap      string // the bwrap program
	RuntimeDir string // $XDG_RUNTIME_DIR
	Socket     string // the run's socket, in RuntimeDir/desk
}

// argv is bwrap's command line for prog with args. bwrap reports the
// sandboxed process's pid as JSON on descriptor 3.
func (s *Sandbox) argv(prog string, args []string) []string {
	desk := filepath.Dir(s.Socket)
	a := []string{s.Bwrap, "--dev-bind", "/", "/",
		"--perms", "0700", "--tmpfs", s.RuntimeDir,
		"--perms", "0700", "--dir", desk,
		"--bind", s.Socket, s.Socket,
		"--die-with-parent", "--json-status-fd", "3", "--", prog}
	return append(a, args...)
}

// Process is a running child.
type Process struct {
	p      *os.Process
	mu     sync.Mutex
	inner  *os.Process // the sandboxed command, when bwrap is p
	status chan int
	chld   chan os.Signal
}

// StartChild makes this process the child subreaper of everything it starts
// (PR_SET_CHILD_SUBREAPER: a descendant whose parent exits is re-parented
// here, not to init or the user manager, so it stays in the agent's
// family), then starts c in this process's process group: it is in the
// terminal's foreground group exactly when collie run is, and Ctrl-C,
// Ctrl-\ and Ctrl-Z from the terminal reach it directly.
//
// From here on this process reaps every child it gets (re-parented ones
// too): nothing else in it may wait for a child.
func StartChild(c Child) (*Process, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become the child subreaper: %w", err)
	}
	pr := &Process{status: make(chan int, 1), chld: make(chan os.Signal, 1)}
	signal.Notify(pr.chld, syscall.SIGCHLD)
	path, argv, files := c.Path, c.Argv, []*os.File{c.Stdin, c.Stdout, c.Stderr}
	var status *os.File
	if c.Sandbox != nil {
		r, w, err := os.Pipe()
		if err != nil {
			signal.Stop(pr.chld)
			return nil, err
		}
		status, files = r, append(files, w)
		path, argv = c.Sandbox.Bwrap, c.Sandbox.argv(c.Path, c.Argv[1:])
	}
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: c.Dir, Env: c.Env, Files: files})
	if err != nil {
		signal.Stop(pr.chld)
		if status != nil {
			status.Close()
			files[3].Close()
		}
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	pr.p = p
	go pr.reap()
	if status != nil {
		files[3].Close() // bwrap has its own from here
		pr.watchSandbox(status)
	}
	return pr, nil
}

// watchSandbox reads bwrap's reports on status: the first names the
// sandboxed process, which signals go to from then on (bwrap itself would
// die of them, and its command with it); the rest are read to the end,
// or bwrap would die of SIGPIPE writing its last one. A bwrap that fails
// before it starts the command reports nothing; reap says how it ended.
func (pr *Process) watchSandbox(status *os.File) {
	dec := json.NewDecoder(status)
	var st struct {
		ChildPID int `json:"child-pid"`
	}
	if dec.Decode(&st) == nil && st.ChildPID > 0 {
		if inner, err := os.FindProcess(st.ChildPID); err == nil {
			pr.mu.Lock()
			pr.inner = inner
			pr.mu.Unlock()
		}
	}
	go func() {
		defer status.Close()
		for dec.Decode(&struct{}{}) == nil {
		}
	}()
}

// PID is the child's process id.
func (pr *Process) PID() int { return pr.p.Pid }

// Signal sends sig to the child (through its pidfd where the kernel has
// them, so a pid reused after the child exited is never hit).
func (pr *Process) Signal(sig os.Signal) error {
	target := pr.p
	pr.mu.Lock()
	if pr.inner != nil {
		target = pr.inner
	}
	pr.mu.Unlock()
	err := target.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Done delivers the child's exit status once: its exit code, or 128+N
// when signal N ended it, as a shell reports it.
func (pr *Process) Done() <-chan int { return pr.status }

// reap waits for every child of this process (the command, and
// descendants re-parented here) on each SIGCHLD, so none stays a zombie,
// and reports the command's status.
func (pr *Process) reap() {
	defer signal.Stop(pr.chld)
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break // ECHILD: none left; 0: none exited yet
			}
			if pid == pr.p.Pid && (ws.Exited() || ws.Signaled()) {
				pr.status <- ExitStatus(ws)
				return
			}
		}
		<-pr.chld
	}
}

// ExitStatus is a shell's exit status for ws: the exit code, or 128+N for
// a process that signal N ended.
func ExitStatus(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// FromTerminal reports whether a SIGINT or SIGQUIT that reached this
// process most likely came from its terminal (Ctrl-C, Ctrl-\): stdin is a
// terminal whose foreground process group is this process's. The terminal
// sent it to the whole group, the child included, so passing it on would
// deliver it twice (two Ctrl-Cs quit some coding agents).
func FromTerminal(stdin *os.File) bool {
	fg, err := unix.IoctlGetInt(int(stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}
