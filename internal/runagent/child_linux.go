package runagent

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
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
}

// Process is a running child.
type Process struct {
	p      *os.Process
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
	p, err := os.StartProcess(c.Path, c.Argv, &os.ProcAttr{
		Dir: c.Dir, Env: c.Env, Files: []*os.File{c.Stdin, c.Stdout, c.Stderr},
	})
	if err != nil {
		signal.Stop(pr.chld)
		return nil, fmt.Errorf("start %s: %w", c.Argv[0], err)
	}
	pr.p = p
	go pr.reap()
	return pr, nil
}

// PID is the child's process id.
func (pr *Process) PID() int { return pr.p.Pid }

// Signal sends sig to the child (through its pidfd where the kernel has
// them, so a pid reused after the child exited is never hit).
func (pr *Process) Signal(sig os.Signal) error {
	err := pr.p.Signal(sig)
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
