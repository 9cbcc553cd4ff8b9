package peercred

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Get returns the credentials of the process at the other end of c, which
// must be a connected Unix stream or seqpacket socket.
//
// It reads SO_PEERCRED inside SyscallConn().Control rather than on a dup of
// the descriptor: a dup would be a second handle on the connection that the
// runtime does not know about.
func Get(c syscall.Conn) (Cred, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	var (
		cred Cred
		gerr error
	)
	err = rc.Control(func(fd uintptr) { cred, gerr = get(int(fd)) })
	if err == nil {
		err = gerr
	}
	if err != nil {
		return Cred{}, fmt.Errorf("read peer credentials: %w", err)
	}
	return cred, nil
}

func get(fd int) (Cred, error) {
	// The kernel answers SO_PEERCRED on any socket, with user 65534 and no
	// process where it recorded nobody (TCP, unconnected datagrams). Only
	// connected Unix stream and seqpacket sockets carry a real answer.
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return Cred{}, fmt.Errorf("socket domain: %w", err)
	}
	if domain != unix.AF_UNIX {
		return Cred{}, errors.New("peer credentials need a Unix socket")
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return Cred{}, fmt.Errorf("socket type: %w", err)
	}
	if typ != unix.SOCK_STREAM && typ != unix.SOCK_SEQPACKET {
		return Cred{}, errors.New("peer credentials need a Unix stream socket")
	}
	u, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Cred{}, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	return Cred{PID: u.Pid, UID: u.Uid, GID: u.Gid}, nil
}
