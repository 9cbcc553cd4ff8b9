//go:build unix && !linux

package sockpath

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

// Where there is no O_PATH (macOS), the walk is by name with lstat, and
// Dial connects to the very string it walked. A part swapped between the
// walk and connect(2) is not caught here, as it is on Linux.

// Check walks path from "/" down with lstat (never following a link) and
// reports whether the bridge may connect to the Unix socket at path as user
// uid (T2, T3). nil means private; any other result is an *Error. A path
// not in the form of CheckForm is refused before the walk.
func Check(path string, uid int) error {
	_, err := walk(path, uid, nil)
	return err
}

// Identify walks path as Check does and returns the ID of the socket it
// ends at.
func Identify(path string, uid int) (ID, error) { return walk(path, uid, nil) }

// Dial walks path as Check does and, when every part passes, connects to
// the same path. Its errors are *Error.
func Dial(ctx context.Context, path string, uid int) (*net.UnixConn, error) {
	c, _, err := dial(ctx, path, uid, nil)
	return c, err
}

// DialID is Dial that also returns the ID of the socket the walk ended at.
func DialID(ctx context.Context, path string, uid int) (*net.UnixConn, ID, error) {
	return dial(ctx, path, uid, nil)
}

func dial(ctx context.Context, path string, uid int, passed func(part string)) (*net.UnixConn, ID, error) {
	id, err := walk(path, uid, passed)
	if err != nil {
		return nil, ID{}, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, ID{}, connectError(path, err)
	}
	return c.(*net.UnixConn), id, nil
}

func walk(path string, uid int, passed func(part string)) (ID, error) {
	if err := CheckForm(path); err != nil {
		return ID{}, err
	}
	if path == "/" {
		return ID{}, &Error{Path: path, Reason: "the path is not a socket"}
	}
	folder := folderOf(path)
	var st unix.Stat_t
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		part := path[:i]
		if i == 0 {
			part = "/"
		}
		if err := lstat(part, &st); err != nil {
			return ID{}, statError(path, part, err)
		}
		if e := judge(path, folder, part, &st, uid); e != nil {
			return ID{}, e
		}
		if passed != nil {
			passed(part)
		}
	}
	sec, nsec := st.Ctim.Unix()
	return ID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Ctime: sec*1e9 + nsec}, nil
}

func lstat(path string, st *unix.Stat_t) error {
	for {
		// lstat can be interrupted on network and FUSE file systems.
		if err := unix.Lstat(path, st); err != unix.EINTR {
			return err
		}
	}
}
