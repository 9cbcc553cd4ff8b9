// Package sockpath decides whether a Unix socket path is private enough for
// the bridge to connect to it (spec T2–T4).
//
// A private Unix socket keeps every other user out, and its only gate is its
// path (T1): anyone who can swap a link or a folder on the way can stand in
// for the durable agent. So before every connection the bridge walks the whole
// path from "/" down with lstat, never following a link, and connects only
// when every part passes the rules of T3. A failure carries the exact reason
// text of T3, which the bridge logs and `collie doctor` shows.
//
// The path walked is the path connected. A path must first have the one form
// CheckForm accepts (absolute, clean, no control character, short enough
// for sun_path): a path such as x/../desk/a.sock is refused, never cleaned,
// because text cleaning and the kernel's resolution disagree where x is a
// link. Then Dial walks and connects in one step. On Linux the walk opens
// each part with openat(O_PATH|O_NOFOLLOW) from the folder held just before,
// checks it with fstat, and connects to the socket it holds through
// /proc/self/fd/N, so a part swapped for a link between the walk and
// connect(2) changes nothing: no name is looked up twice. Elsewhere (macOS)
// the walk is by name with lstat and Dial connects to the same string.
//
// A connection kept open for more requests (DialID gives the ID of the
// socket it reached) is walked again before each request with Identify,
// by name with lstat: it connects to nothing, and the connection carries
// the request only when that walk passes and ends at the connection's ID.
//
// Measured on a busy 2-core VM (Linux 6.18), medians of five runs
// interleaved with the code it replaced, a path four folders deep: Check
// about 40 µs (the lstat walk took about 21 µs); Dial, walk and connection,
// about 90 µs (Check then a dial by name took about 58 µs); a whole idle
// poll of an agent (upstream's BenchmarkPoll304) about 240 µs (was 210 µs).
package sockpath

// Code names what a check found, so that a program acts on it (collie
// doctor's fix, the bridge's status) without reading the sentence.
type Code string

// The codes of an Error. The sentence in Reason says the same in words.
const (
	CodeNoPath        Code = "no-path"            // no socket path given
	CodeForm          Code = "path-form"          // not absolute, not clean, a control character or NUL, too long
	CodeSymlink       Code = "symlink"            // a part of the path is a symbolic link
	CodeNotDirectory  Code = "not-a-directory"    // a folder on the way, or the socket's folder, is not a directory
	CodeWritable      Code = "writable-by-others" // a folder above the socket's folder is writable by group or others, not sticky
	CodeFolderOwner   Code = "folder-owner"       // the socket's folder is another user's
	CodeFolderMode    Code = "folder-mode"        // the socket's folder's mode is not 0700
	CodeNotSocket     Code = "not-a-socket"       // the path is no socket
	CodeSocketOwner   Code = "socket-owner"       // the socket is another user's
	CodeSocketMode    Code = "socket-mode"        // group or others have a permission on the socket
	CodeListener      Code = "listener-not-you"   // the process listening is not the user (the peer check)
	CodeNoSocket      Code = "no-socket"          // nothing at the path, or a folder on the way is missing
	CodeNotListening  Code = "not-listening"      // a socket, but nothing listens on it
	CodeCannotCheck   Code = "cannot-check"       // a part could not be looked at (permission, I/O)
	CodeCannotConnect Code = "cannot-connect"     // every part passed and connect(2) failed otherwise
	CodeUnsupported   Code = "unsupported"        // this platform cannot check owners
)

// Private reports whether c is a refusal of the path's privacy (T3, or a
// listener that is not the user), rather than an agent that is not there.
func (c Code) Private() bool {
	switch c {
	case CodeSymlink, CodeNotDirectory, CodeWritable, CodeFolderOwner, CodeFolderMode,
		CodeNotSocket, CodeSocketOwner, CodeSocketMode, CodeListener:
		return true
	}
	return false
}

// Error is what Check returns when the bridge may not connect.
// Its Error method returns Reason exactly, so callers can show it as is.
type Error struct {
	// Path is the socket path that was checked, exactly as it was given.
	Path string
	// Code says what failed, for programs; Reason says it for people.
	Code Code
	// Part is the part of the path the failure is about: a folder on the
	// way, the socket's folder or the socket itself ("" when the path's
	// form is refused before any part is looked at).
	Part string
	// Reason is the sentence of spec T3 or T4 that says what failed.
	Reason string
	// NoSocket is true when nothing is at the path, a folder on the way is
	// missing, or nothing listens on the socket (T4). That means the durable
	// agent is not running: it is not a privacy error.
	NoSocket bool
	// Connect is true when every part of the path passed and connecting
	// to the socket failed (Dial only).
	Connect bool
	// Err is the underlying system error, if any, for errors.Is.
	Err error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap returns the system error behind e, if any.
func (e *Error) Unwrap() error { return e.Err }

// ID identifies the socket file a walk ended at: its device, inode and
// change time. A kept connection is to the socket of one ID; a walk that
// passes but ends at another ID (a socket replaced by another at the same
// path, even one that reuses the inode number: a new or renamed file has
// a new change time) means the kept connection is to the wrong socket.
type ID struct {
	Dev, Ino uint64
	Ctime    int64 // nanoseconds since the epoch
}

// ListenerError is the refusal of a socket whose listener is not the user,
// found by the peer check once connected (peercred): err says who it is.
func ListenerError(path string, err error) *Error {
	return &Error{Path: path, Code: CodeListener, Part: path, Reason: "the socket's listener is not you: " + err.Error(), Err: err}
}
