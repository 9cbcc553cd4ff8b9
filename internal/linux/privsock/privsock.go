//go:build unix

// Package privsock creates private Unix sockets the way T5 asks: the folder
// 0700 (made when missing, refused when it has another mode), the socket
// 0600, a stale socket removed first, and the result checked with the same
// walk the bridge runs before it connects (T2, T3).
package privsock

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/collie-linux/collie/internal/linux/fileowner"
	"github.com/collie-linux/collie/internal/linux/sockpath"
)

// Listen listens on a new private Unix socket at path, for this process's
// user. path must have the form the bridge accepts (sockpath.CheckForm:
// absolute and clean, short enough for sun_path): it is refused, not
// cleaned, so the agent listens on exactly the path the bridge walks (T2).
func Listen(path string) (net.Listener, error) {
	if err := sockpath.CheckForm(path); err != nil {
		return nil, err
	}
	if err := ensureFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	// Between listen and chmod the socket has the umask's mode, but nobody
	// else can reach it: its folder is 0700.
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("set the mode of %s: %w", path, err)
	}
	if err := Verify(path); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Verify checks a socket this process listens on with the bridge's walk,
// so an agent never serves from a path the bridge would refuse.
func Verify(path string) error {
	if err := sockpath.Check(path, os.Getuid()); err != nil {
		return fmt.Errorf("the socket %s is not private: %w", path, err)
	}
	return nil
}

// ensureFolder makes dir with mode 0700 when it is missing, and refuses one
// that exists with another mode or owner (T5): fixing it silently could hide
// a folder someone else prepared.
func ensureFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create the socket's folder: %w", err)
		}
		// MkdirAll applies the umask; say exactly what we mean.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("set the mode of the socket's folder: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("check the socket's folder: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("the socket's folder %s is not a directory; remove it or choose another socket path", dir)
	}
	if uid, ok := fileowner.UID(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("the socket's folder %s belongs to user %d, not to %d; remove it or choose another socket path", dir, uid, os.Getuid())
	}
	if mode := fi.Mode() & (fs.ModePerm | fs.ModeSticky | fs.ModeSetgid | fs.ModeSetuid); mode != 0o700 {
		return fmt.Errorf("the socket's folder %s has mode %04o, not 0700; fix it with: chmod 0700 %s", dir, unixMode(fi.Mode()), dir)
	}
	return nil
}

// removeStale removes a socket left behind by a process that is gone, and
// refuses to take over one that still answers or a path that is not a socket.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another socket path", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("another program is already listening at %s; stop it first", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove the stale socket %s: %w", path, err)
	}
	return nil
}

// unixMode turns a Go file mode into the octal a user sees in ls and chmod.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}
