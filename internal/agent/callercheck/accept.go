package callercheck

import (
	"net"
	"time"
)

// Listener wraps l, a listener of Unix sockets, so that every connection
// it accepts records when it was accepted (CLOCK_BOOTTIME, the clock of the
// start times in /proc). Serve the agent's socket through it: where the
// kernel gives no pidfd for the caller (SO_PEERPIDFD came in Linux 6.5, and
// it gives none for a caller that has exited), the check pins the caller by
// its pid, and a process that took the pid after the caller exited would
// otherwise be judged in its place. A process that started after the
// connection was accepted is not the one that connected (C3).
func Listener(l net.Listener) net.Listener { return &listener{l} }

type listener struct{ net.Listener }

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	at := bootTime() // first: the connection was made before this
	if uc, ok := c.(*net.UnixConn); ok {
		return &Conn{UnixConn: uc, accepted: at}, nil
	}
	return c, nil
}

// Conn is a connection accepted by Listener.
type Conn struct {
	*net.UnixConn
	accepted time.Duration
}

// Accepted returns when the connection was accepted, as the time since
// boot (CLOCK_BOOTTIME); 0 where the platform has no such clock.
func (c *Conn) Accepted() time.Duration { return c.accepted }

// acceptedConn is what Check looks for to know when a connection was
// accepted.
type acceptedConn interface{ Accepted() time.Duration }
