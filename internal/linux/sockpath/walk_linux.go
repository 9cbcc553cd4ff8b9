package sockpath

import (
	"context"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// On Linux the walk holds what it checked. It opens each part with
// openat(O_PATH|O_NOFOLLOW) relative to the folder it opened just before,
// checks the open file with fstat, and in the end connects to the socket it
// holds, through /proc/self/fd/N, rather than to the path by name. A part
// swapped for a link after it was checked then changes nothing: the kernel
// never looks the name up again. (Connecting through /proc/self/fd is what
// systemd does for socket paths longer than sun_path.)

// openFlags opens a part of the path without following it when it is a
// link, and without reading or writing it: O_PATH needs only search
// permission on the folder, as lstat does.
const openFlags = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC

// Check walks path from "/" down (never following a link) and reports
// whether the bridge may connect to the Unix socket at path as user uid
// (T2, T3). nil means private; any other result is an *Error. A path not in
// the form of CheckForm is refused before the walk.
//
// To connect, use Dial: it runs the same walk and connects to exactly what
// the walk checked.
func Check(path string, uid int) error {
	fd, _, err := walk(path, uid, nil)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// Identify walks path with lstat, by name (the same rules and reasons as
// Check), and returns the ID of the socket it ends at: a kept connection
// made by DialID may carry one more request only when the walk before it
// passes and ends at the connection's ID. It connects to nothing, so it
// need not hold what it checked, and costs a third of the held walk.
func Identify(path string, uid int) (ID, error) { return walkByName(path, uid, nil) }

// Dial walks path as Check does and, when every part passes, connects to
// the socket the walk checked: the very file, held open since its check, so
// no part of the path can be swapped between the walk and the connection.
// Its errors are *Error, for the walk and for the connection (nothing
// listening is NoSocket, as T4 asks).
func Dial(ctx context.Context, path string, uid int) (*net.UnixConn, error) {
	c, _, err := dial(ctx, path, uid, nil)
	return c, err
}

// DialID is Dial that also returns the ID of the socket it connected to.
func DialID(ctx context.Context, path string, uid int) (*net.UnixConn, ID, error) {
	return dial(ctx, path, uid, nil)
}

// dial is Dial with a hook that runs after each part of the path passes,
// with that part: the tests swap parts there.
func dial(ctx context.Context, path string, uid int, passed func(part string)) (*net.UnixConn, ID, error) {
	fd, id, err := walk(path, uid, passed)
	if err != nil {
		return nil, ID{}, err
	}
	defer unix.Close(fd)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		if e := connectError(path, err); !e.NoSocket || !procMissing() {
			return nil, ID{}, e
		}
		return nil, ID{}, &Error{Path: path, Code: CodeCannotConnect, Part: path, Reason: "cannot connect to " + path + ": /proc is not mounted, and the bridge connects through /proc/self/fd to the very socket it checked; mount procfs at /proc", Connect: true, Err: err}
	}
	return c.(*net.UnixConn), id, nil
}

// procMissing reports whether /proc/self/fd cannot be seen.
func procMissing() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/fd", &st) != nil
}

// walk checks path part by part from "/" and returns an O_PATH descriptor
// of the socket, which the caller closes, and the socket's ID. passed,
// when not nil, runs after each part passes.
func walk(path string, uid int, passed func(part string)) (int, ID, error) {
	var st unix.Stat_t
	fd, err := walkStat(path, uid, passed, &st)
	if err != nil {
		return -1, ID{}, err
	}
	return fd, ID{Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}, nil
}

func walkStat(path string, uid int, passed func(part string), st *unix.Stat_t) (int, error) {
	if err := CheckForm(path); err != nil {
		return -1, err
	}
	if path == "/" {
		return -1, &Error{Path: path, Code: CodeNotSocket, Part: path, Reason: "the path is not a socket"}
	}
	folder := folderOf(path)

	fd, err := open(unix.AT_FDCWD, "/")
	if err != nil {
		return -1, statError(path, "/", err)
	}
	// Visit "/", then each prefix of path that ends before a "/", then path
	// itself. A clean absolute path has no empty, "." or ".." component, so
	// each step goes one folder down from the one held.
	start := 1
	for i := 0; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		part := path[:i]
		if i == 0 {
			part = "/"
		} else {
			next, err := open(fd, path[start:i])
			unix.Close(fd)
			if err != nil {
				return -1, statError(path, part, err)
			}
			fd, start = next, i+1
		}
		if err := fstat(fd, st); err != nil {
			unix.Close(fd)
			return -1, statError(path, part, err)
		}
		if e := judge(path, folder, part, st, uid); e != nil {
			unix.Close(fd)
			return -1, e
		}
		if passed != nil {
			passed(part)
		}
	}
	return fd, nil
}

func open(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, openFlags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstat(fd int, st *unix.Stat_t) error {
	for {
		if err := unix.Fstat(fd, st); err != unix.EINTR {
			return err
		}
	}
}
