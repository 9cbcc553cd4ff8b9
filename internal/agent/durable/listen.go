package durable

import (
	"fmt"
	"net"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/collie-linux/collie/internal/linux/privsock"
)

// Listen returns the socket the agent serves on. Under socket activation it
// takes the one socket systemd passed (reading LISTEN_FDS once and unsetting
// it, so children do not inherit it) and checks that it meets the same rules
// as a socket the agent makes itself (T5). Otherwise it makes its own private
// socket at path. activated says which happened.
func Listen(path string) (l net.Listener, activated bool, err error) {
	ls, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("read the sockets systemd passed: %w", err)
	}
	switch len(ls) {
	case 0:
		l, err := privsock.Listen(path)
		return l, false, err
	case 1:
		if err := checkActivated(ls[0]); err != nil {
			ls[0].Close()
			return nil, true, err
		}
		return ls[0], true, nil
	default:
		for _, l := range ls {
			if l != nil {
				l.Close()
			}
		}
		return nil, true, fmt.Errorf("systemd passed %d sockets; the agent serves exactly one: give its .socket unit one ListenStream=", len(ls))
	}
}

func checkActivated(l net.Listener) error {
	if l == nil {
		return fmt.Errorf("systemd passed a socket that is not a listening stream socket; use ListenStream= in the .socket unit")
	}
	addr, ok := l.Addr().(*net.UnixAddr)
	if !ok || addr.Name == "" || addr.Name[0] != '/' {
		return fmt.Errorf("systemd passed %s, not a Unix socket with a path; use ListenStream=%%t/desk/NAME.sock", l.Addr())
	}
	if err := privsock.Verify(addr.Name); err != nil {
		return fmt.Errorf("%w (check SocketMode=0600 and DirectoryMode=0700 in the .socket unit)", err)
	}
	return nil
}
