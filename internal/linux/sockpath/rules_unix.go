//go:build unix

package sockpath

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// File type and mode bits as lstat reports them. They are the same on every
// Unix; naming them here keeps the walk free of per-platform types.
const (
	typeMask   = 0o170000
	typeDir    = 0o040000
	typeLink   = 0o120000
	typeSocket = 0o140000
	modeBits   = 0o7777 // permission bits plus setuid, setgid and sticky
	sticky     = 0o1000
)

// sunPathLen is the size of sun_path in a Unix socket address on this
// platform: 108 on Linux, 104 on macOS and the BSDs.
const sunPathLen = len(unix.RawSockaddrUnix{}.Path)

// folderOf returns the socket's folder of a clean absolute path.
func folderOf(path string) string {
	if i := strings.LastIndexByte(path, '/'); i > 0 {
		return path[:i]
	}
	return "/"
}

// judge applies the T3 rule for part, one step of the walk of path, to what
// lstat or fstat said about it. nil means the part passes.
func judge(path, folder, part string, st *unix.Stat_t, uid int) *Error {
	mode := uint32(st.Mode)
	if mode&typeMask == typeLink {
		return &Error{Path: path, Code: CodeSymlink, Part: part, Reason: "socket-not-private: " + part + " is a symlink"}
	}
	var code Code
	var reason string
	switch part {
	case path:
		code, reason = checkSocket(mode, st.Uid, uid)
	case folder:
		code, reason = checkFolder(part, mode, st.Uid, uid)
	default:
		code, reason = checkAbove(part, mode)
	}
	if reason != "" {
		return &Error{Path: path, Code: code, Part: part, Reason: reason}
	}
	return nil
}

// statError turns a failed look at part into the reason T4 asks for.
func statError(path, part string, err error) *Error {
	if errors.Is(err, unix.ENOENT) {
		return &Error{Path: path, Code: CodeNoSocket, Part: part, Reason: "no socket at " + path, NoSocket: true, Err: err}
	}
	return &Error{Path: path, Code: CodeCannotCheck, Part: part, Reason: "cannot check " + part + ": " + err.Error(), Err: err}
}

// connectError turns a failed connect(2) to the socket at path into a
// sentence. Nothing there, or nothing listening, is not a privacy error (T4).
func connectError(path string, err error) *Error {
	inner := err
	var op *net.OpError
	if errors.As(err, &op) {
		inner = op.Err // without the address dialled, which may be /proc/self/fd/N
	}
	var sc *os.SyscallError
	if errors.As(inner, &sc) {
		inner = sc.Err
	}
	switch {
	case errors.Is(err, unix.ECONNREFUSED):
		return &Error{Path: path, Code: CodeNotListening, Part: path, Reason: "nothing is listening at " + path + "; start the agent (or its .socket unit)", NoSocket: true, Connect: true, Err: err}
	case errors.Is(err, unix.ENOENT):
		return &Error{Path: path, Code: CodeNoSocket, Part: path, Reason: "no socket at " + path, NoSocket: true, Connect: true, Err: err}
	}
	return &Error{Path: path, Code: CodeCannotConnect, Part: path, Reason: "cannot connect to " + path + ": " + inner.Error(), Connect: true, Err: err}
}

// checkAbove applies the T3 rule for a folder above the socket's folder. Its
// owner is not checked: a service with a private /tmp sees root's folder as
// user 65534. A sticky folder such as /tmp may be writable by all, because
// nobody can rename or remove what another user made in it.
func checkAbove(part string, mode uint32) (Code, string) {
	if mode&typeMask != typeDir {
		return CodeNotDirectory, part + " is not a directory"
	}
	if mode&0o022 != 0 && mode&sticky == 0 {
		return CodeWritable, part + " has mode " + octal(mode) + ", so group or others can write to it"
	}
	return "", ""
}

// checkFolder applies the T3 rule for the socket's own folder: the user's,
// mode exactly 0700. The sticky bit counts, so /tmp is never the folder.
func checkFolder(part string, mode, owner uint32, uid int) (Code, string) {
	if mode&typeMask != typeDir {
		return CodeNotDirectory, "the socket's folder " + part + " is not a directory"
	}
	if !sameUID(owner, uid) {
		return CodeFolderOwner, "the socket's folder " + part + " belongs to user " + strconv.FormatUint(uint64(owner), 10) + ", not to " + strconv.Itoa(uid)
	}
	if mode&modeBits != 0o700 {
		return CodeFolderMode, "the socket's folder " + part + " has mode " + octal(mode) + ", not 0700"
	}
	return "", ""
}

// checkSocket applies the T3 rule for the socket: a socket, the user's, with
// no permission for group or others.
func checkSocket(mode, owner uint32, uid int) (Code, string) {
	if mode&typeMask != typeSocket {
		return CodeNotSocket, "the path is not a socket"
	}
	if !sameUID(owner, uid) {
		return CodeSocketOwner, "the socket belongs to user " + strconv.FormatUint(uint64(owner), 10) + ", not to " + strconv.Itoa(uid)
	}
	if mode&0o077 != 0 {
		return CodeSocketMode, "the socket has mode " + octal(mode) + ", not 0600"
	}
	return "", ""
}

// sameUID compares without converting uid to uint32, which would make a
// negative uid match a large owner.
func sameUID(owner uint32, uid int) bool { return int64(owner) == int64(uid) }

// octal prints the permission, setuid, setgid and sticky bits as four octal
// digits, like ls and chmod: 0755, 1777, 2700.
func octal(mode uint32) string { return fmt.Sprintf("%04o", mode&modeBits) }
