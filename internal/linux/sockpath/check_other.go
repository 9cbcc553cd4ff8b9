//go:build !unix

package sockpath

import (
	"context"
	"net"
)

// sunPathLen is the size of sun_path on Windows, as on Linux.
const sunPathLen = 108

// errNoOwner is what Check and Dial say on a platform without Unix file
// owners: nothing can show that a socket is private. Closed by default (T3).
func errNoOwner(path string) error {
	return &Error{Path: path, Code: CodeUnsupported, Reason: "this platform shows no file owner"}
}

// Check refuses every path: this platform has no Unix file owners, so
// nothing can show that a socket is private. Closed by default (T3).
func Check(path string, uid int) error { return errNoOwner(path) }

// Dial refuses for the same reason.
func Dial(ctx context.Context, path string, uid int) (*net.UnixConn, error) {
	return nil, errNoOwner(path)
}

// Identify refuses for the same reason.
func Identify(path string, uid int) (ID, error) { return ID{}, errNoOwner(path) }

// DialID refuses for the same reason.
func DialID(ctx context.Context, path string, uid int) (*net.UnixConn, ID, error) {
	return nil, ID{}, errNoOwner(path)
}
