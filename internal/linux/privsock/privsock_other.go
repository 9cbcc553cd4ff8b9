//go:build !unix

package privsock

import (
	"errors"
	"net"
)

// errNoOwners is T3's sentence for a platform without Unix user ids.
var errNoOwners = errors.New("a private socket needs Unix user ids; on this platform use the token transport (HTTPS)")

// Listen refuses: without file owners a socket cannot be made private (T3, T6).
func Listen(path string) (net.Listener, error) { return nil, errNoOwners }

// Verify refuses for the same reason.
func Verify(path string) error { return errNoOwners }
