//go:build unix && !linux

package sockpath

import (
	"context"
	"net"
)

// Where there is no O_PATH (macOS), the walk is by name with lstat, and
// Dial connects to the very string it walked. A part swapped between the
// walk and connect(2) is not caught here, as it is on Linux.

// Check walks path from "/" down with lstat (never following a link) and
// reports whether the bridge may connect to the Unix socket at path as user
// uid (T2, T3). nil means private; any other result is an *Error. A path
// not in the form of CheckForm is refused before the walk.
func Check(path string, uid int) error {
	_, err := walkByName(path, uid, nil)
	return err
}

// Identify walks path as Check does and returns the ID of the socket it
// ends at.
func Identify(path string, uid int) (ID, error) { return walkByName(path, uid, nil) }

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
	id, err := walkByName(path, uid, passed)
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
