//go:build !linux

package callercheck

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
)

// Checker is the caller check; on this platform it cannot be made.
type Checker struct{}

// New fails on this platform: only Linux tells a socket server which
// process connected (SO_PEERCRED) and lets it follow that process's
// parents and cgroup, and the check refuses to guess (C3).
func New() (*Checker, error) {
	return nil, fmt.Errorf("%w on %s: it needs Linux's SO_PEERCRED and /proc; set CallerCheck = \"off\" to run without it, and then any process of your user can answer the agent's questions", ErrUnsupported, runtime.GOOS)
}

// Cgroup returns "".
func (c *Checker) Cgroup() string { return "" }

// PeerPidfd returns false.
func (c *Checker) PeerPidfd() bool { return false }

// Check refuses every caller.
func (c *Checker) Check(syscall.Conn) (Caller, error) {
	return Caller{}, &Refused{Reason: "the caller check is not available on " + runtime.GOOS + "; " + answerElsewhere}
}

func bootTime() time.Duration { return 0 }

// NewFamily fails on this platform, as New does.
func NewFamily() (*Checker, error) { return New() }

// FamilyOnly returns false.
func (c *Checker) FamilyOnly() bool { return false }
