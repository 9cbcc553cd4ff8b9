//go:build unix

package upstream

import (
	"time"

	"golang.org/x/sys/unix"
)

// alive reports whether an idle connection may carry another request: the
// peer has not closed it (a recv with MSG_PEEK would block) and it has not
// been idle longer than idleTimeout.
func (c *keptConn) alive(now time.Time) bool {
	if c.raw == nil || now.Sub(c.idleSince) > idleTimeout {
		return false
	}
	rc, err := c.raw.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	var one [1]byte
	rc.Control(func(fd uintptr) {
		_, _, e := unix.Recvfrom(int(fd), one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		ok = e == unix.EAGAIN
	})
	return ok
}

// awaitReply waits until the connection has something to read, or the
// peer closed it, holding no buffer: a recv with MSG_PEEK of one byte,
// retried when the poller says the descriptor is readable. Without a
// descriptor it returns at once: the reply is read through a buffer.
func (c *keptConn) awaitReply() error {
	if c.raw == nil {
		return nil
	}
	rc, err := c.raw.SyscallConn()
	if err != nil {
		return err
	}
	var one [1]byte
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		_, _, e := unix.Recvfrom(int(fd), one[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if e == unix.EAGAIN || e == unix.EINTR {
			return false // nothing yet: wait for the poller
		}
		rerr = e
		return true
	})
	if err != nil {
		return err
	}
	return rerr
}
