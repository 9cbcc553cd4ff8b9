package sockpath

import (
	"path"
	"strconv"
)

// MaxPathLen is the longest socket path, in bytes, that fits a Unix socket
// address (sun_path) with its closing NUL: 107 on Linux, 103 on macOS.
const MaxPathLen = sunPathLen - 1

// CheckForm reports whether path has the one form the bridge accepts for a
// socket path, and is nil when it does: absolute, clean (no "." or ".."
// part, no doubled or trailing slash), no NUL byte or other control
// character, and short enough for a Unix socket address. Anything else is
// an *Error whose reason says what to write instead.
//
// The form matters because the walk and the connection must be about the
// very same path (T2): a path such as /run/user/1000/x/../desk/a.sock is
// one path when cleaned as text and another when the kernel resolves it
// (x may be a link), so it is refused rather than cleaned. The same goes
// for sources.json, `collie durable attach` and an agent's own socket.
//
// CheckForm only reads the string; it does not look at the file system.
func CheckForm(p string) error {
	if p == "" {
		return &Error{Code: CodeNoPath, Reason: "no socket path given; give the full path"}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == 0:
			// Not printed: the kernel would stop at the NUL, so the
			// path shown would not be the path used.
			return &Error{Path: p, Code: CodeForm, Reason: "the socket path has a NUL byte; give the path without it"}
		case c < 0x20 || c == 0x7f:
			return &Error{Path: p, Code: CodeForm, Reason: "the socket path " + strconv.QuoteToASCII(p) + " has a control character; give the path without it"}
		}
	}
	if p[0] != '/' {
		return &Error{Path: p, Code: CodeForm, Reason: "the socket path " + p + " is not absolute; give the full path"}
	}
	if path.Clean(p) != p {
		return &Error{Path: p, Code: CodeForm, Reason: "the socket path " + p + ` is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`}
	}
	if len(p) > MaxPathLen {
		return &Error{Path: p, Code: CodeForm, Reason: "the socket path " + p + " is " + strconv.Itoa(len(p)) + " bytes, more than the " + strconv.Itoa(MaxPathLen) + " a Unix socket address holds; use a shorter path, such as $XDG_RUNTIME_DIR/desk/NAME.sock"}
	}
	return nil
}
