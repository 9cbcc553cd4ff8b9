//go:build !unix

package sockpath

// Check refuses every path: this platform has no Unix file owners, so
// nothing can show that a socket is private. Closed by default (T3).
func Check(path string, uid int) error {
	return &Error{Path: path, Reason: "this platform shows no file owner"}
}
