// Package peercred reads who is at the other end of a Unix socket, so the
// bridge can talk only to its own user (spec L3): the durable agent it
// connects to must run as the user, and so must every caller of its control
// socket.
//
// The kernel records the peer's credentials when the connection is made
// (SO_PEERCRED on Linux): for a connection the bridge dialed, that is the
// process that called listen, such as the systemd user manager under socket
// activation; for a connection it accepted, the process that called connect.
package peercred

import (
	"fmt"
	"net"
	"syscall"
)

// Cred is what the kernel recorded about the process at the other end.
type Cred struct {
	// PID is 0 when the peer's process is not visible from here. It is for
	// log lines only: by the time it is read the peer may have exited and
	// its pid gone to another process, so nothing here decides by it (the
	// uid is recorded at connect and cannot change). The caller check of
	// the durable agent pins the process; see internal/agent/callercheck (C3).
	PID      int32
	UID, GID uint32
}

// SameUser returns nil when the peer of c runs as uid, and otherwise an
// error that says who the peer is.
func SameUser(c syscall.Conn, uid int) error {
	cred, err := Get(c)
	if err != nil {
		return err
	}
	return checkUID(cred, uid)
}

func checkUID(cred Cred, uid int) error {
	if int64(cred.UID) != int64(uid) {
		return fmt.Errorf("the peer runs as user %d, not %d", cred.UID, uid)
	}
	return nil
}

// Listener wraps l, a listener of Unix sockets, so that Accept returns only
// connections whose peer runs as uid. Any other connection is closed at once
// and handed, with the reason, to onRefused (which may be nil) so the caller
// can log one line; Accept then waits for the next connection. onRefused
// runs inside Accept, so it should return quickly.
func Listener(l net.Listener, uid int, onRefused func(Cred, error)) net.Listener {
	return &listener{Listener: l, uid: uid, onRefused: onRefused}
}

type listener struct {
	net.Listener
	uid       int
	onRefused func(Cred, error)
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cred, err := check(c, l.uid)
		if err == nil {
			return c, nil
		}
		c.Close()
		if l.onRefused != nil {
			l.onRefused(cred, err)
		}
	}
}

// check returns the peer's credentials and whether it may stay.
func check(c net.Conn, uid int) (Cred, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return Cred{}, fmt.Errorf("peer credentials need a Unix socket, not a %T", c)
	}
	cred, err := Get(sc)
	if err != nil {
		return Cred{}, err
	}
	return cred, checkUID(cred, uid)
}
