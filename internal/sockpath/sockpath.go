// Package sockpath decides whether a Unix socket path is private enough for
// the bridge to connect to it (spec T2–T4).
//
// A private Unix socket keeps every other user out, and its only gate is its
// path (T1): anyone who can swap a link or a folder on the way can stand in
// for the durable agent. So before every connection the bridge walks the whole
// path from "/" down with lstat, never following a link, and connects only
// when every part passes the rules of T3. A failure carries the exact reason
// text of T3, which the bridge logs and `collie doctor` shows.
package sockpath

// Error is what Check returns when the bridge may not connect.
// Its Error method returns Reason exactly, so callers can show it as is.
type Error struct {
	// Path is the socket path that was checked, cleaned when it was absolute.
	Path string
	// Reason is the sentence of spec T3 or T4 that says what failed.
	Reason string
	// NoSocket is true when nothing is at the path, or a folder on the way is
	// missing (T4). That means the durable agent is not running: it is not a
	// privacy error.
	NoSocket bool
	// Err is the underlying system error, if any, for errors.Is.
	Err error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap returns the system error behind e, if any.
func (e *Error) Unwrap() error { return e.Err }
