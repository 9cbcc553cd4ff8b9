//go:build unix

package runcmd

import (
	"os"
	"syscall"
)

// groupAttr puts the command in a process group of its own, so a timeout
// or abort stops everything it started.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends SIGTERM, or SIGKILL when hard, to the whole group.
func signalGroup(_ *os.Process, pgid int, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-pgid, sig)
}
