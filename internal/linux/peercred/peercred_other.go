//go:build !linux

package peercred

import (
	"errors"
	"runtime"
	"syscall"
)

// Get fails on this platform: the bridge trusts only peer credentials that
// the kernel records as Linux does (SO_PEERCRED), and refuses rather than
// guess (C3, L3).
func Get(syscall.Conn) (Cred, error) {
	return Cred{}, errors.New("peer credentials are not available on " + runtime.GOOS)
}
