// Package sources keeps the bridge's list of durable agents, sources.json
// (spec K5): one entry per agent, reached over a private Unix socket or over
// HTTPS with a token.
//
// The file holds tokens in plain text, so it is written atomically with mode
// 0600, a more open file is tightened at start-up, and nothing here prints a
// token: a Source formats, logs and reports errors with "(token set)" in its
// place.
package sources

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"

	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Version is the version of sources.json this package reads and writes.
const Version = 1

// MaxNameLen is the longest name of a durable agent, in bytes
// (wire.MaxNameBytes: the agent and the bridge share the rule).
const MaxNameLen = wire.MaxNameBytes

// Source is one durable agent the bridge reads.
type Source struct {
	Name   string `json:"name"`             // 1 to 64 bytes of [a-z0-9._-], starting with a letter or digit
	Socket string `json:"socket,omitempty"` // absolute path, for the Unix socket transport
	URL    string `json:"url,omitempty"`    // for the token transport
	Token  string `json:"token,omitempty"`  // secret: never printed
	// CAFile is a PEM file of extra roots for an agent whose certificate a
	// private CA signed; the system roots are trusted as well.
	CAFile string `json:"caFile,omitempty"`

	// Refused, set by Load, says why the bridge never connects to this
	// entry: its socket path is not in the one form the bridge accepts
	// (T2, sockpath.CheckForm). Load keeps the entry, so the other agents
	// still load and the file is not rewritten; Save writes it back as it
	// was, until the user fixes or detaches it. The socket client refuses
	// such a path too, with the same reason.
	Refused string `json:"-"`
}

// Transport names how the bridge reaches s: "socket" or "https".
func (s Source) Transport() string {
	if s.Socket != "" {
		return "socket"
	}
	return "https"
}

// String describes s for people, with "(token set)" in place of a token:
//
//	desk: socket /run/user/1000/desk/app.sock
//	cloud: https://agent.example.com (token set)
func (s Source) String() string {
	if s.Socket != "" {
		return s.Name + ": socket " + s.Socket
	}
	return s.Name + ": " + s.URL + " " + s.tokenNote()
}

// GoString is what %#v prints: the fields, with the token left out.
func (s Source) GoString() string {
	return fmt.Sprintf("sources.Source{Name:%q, Socket:%q, URL:%q, Token:%s}", s.Name, s.Socket, s.URL, s.tokenNote())
}

// Format makes every fmt verb print s without its token: %v and %s print
// String, %+v the fields, %#v GoString, and other verbs apply to String.
// Without it, %+v and %#v would print the Token field as it is.
func (s Source) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		io.WriteString(f, s.GoString())
	case verb == 'v' && f.Flag('+'):
		fmt.Fprintf(f, "{Name:%s Socket:%s URL:%s Token:%s}", s.Name, s.Socket, s.URL, s.tokenNote())
	default:
		fmt.Fprintf(f, fmt.FormatString(f, verb), s.String())
	}
}

// LogValue makes log/slog record s without its token, in text and JSON.
func (s Source) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("name", s.Name), slog.String("transport", s.Transport())}
	if s.Socket != "" {
		attrs = append(attrs, slog.String("socket", s.Socket))
	} else {
		attrs = append(attrs, slog.String("url", s.URL), slog.String("token", s.tokenNote()))
	}
	return slog.GroupValue(attrs...)
}

func (s Source) tokenNote() string {
	if s.Token == "" {
		return "(no token)"
	}
	return "(token set)"
}

// Validate reports what is wrong with s, in a sentence that says what to do.
// Its errors never contain the token or the URL.
func (s Source) Validate() error {
	if err := s.validate(); err != nil {
		return err
	}
	return s.checkSocketPath()
}

// checkSocketPath refuses a socket path that is not in the form the bridge
// walks and connects to (T2): relative, or not clean (x/../desk/a.sock,
// doubled or trailing slashes), or with a control byte, or too long.
func (s Source) checkSocketPath() error {
	if s.Socket == "" {
		return nil
	}
	if err := sockpath.CheckForm(s.Socket); err != nil {
		return fmt.Errorf("durable agent %s: %w", s.Name, err)
	}
	return nil
}

// validate is Validate without the form of the socket path.
func (s Source) validate() error {
	if err := CheckName(s.Name); err != nil {
		return err
	}
	switch {
	case s.Socket != "" && s.URL != "":
		return fmt.Errorf("durable agent %s has both a socket and a URL; keep one", s.Name)
	case s.Socket == "" && s.URL == "":
		return fmt.Errorf("durable agent %s has neither a socket nor a URL; give one", s.Name)
	case s.Socket != "" && s.Token != "":
		// The socket's path is its only gate (T1); a token there would be
		// sent nowhere and only suggest a protection that is not there.
		return fmt.Errorf("durable agent %s has a socket and a token, but a socket carries no token; remove the token", s.Name)
	case s.Socket != "" && s.CAFile != "":
		return fmt.Errorf("durable agent %s has a socket and a CA file, but a socket uses no TLS; remove the CA file", s.Name)
	case s.URL != "":
		if err := CheckURL(s.URL); err != nil {
			return fmt.Errorf("durable agent %s: %w", s.Name, err)
		}
		if _, err := wire.CheckToken(s.Token); err != nil {
			return fmt.Errorf("durable agent %s: %w", s.Name, err)
		}
		if s.CAFile != "" && !path.IsAbs(s.CAFile) {
			return fmt.Errorf("durable agent %s: the CA file %s is not an absolute path; give the full path", s.Name, s.CAFile)
		}
	}
	return nil
}

// CheckName reports whether name can name a durable agent: wire.ValidName,
// the rule the agent's instance name follows too, with an error that
// says which part fails and how to fix it.
func CheckName(name string) error { return checkName(name, true) }

// checkName is CheckName; with quote false its error leaves the name out,
// for names read from sources.json, where a token may sit in the wrong
// field (K5).
func checkName(name string, quote bool) error {
	switch {
	case wire.ValidName(name):
		return nil
	case name == "":
		return errors.New("a durable agent needs a name; " + wire.NameRule)
	case len(name) > MaxNameLen:
		// Not quoted: a long string in the wrong place may be a token.
		return fmt.Errorf("a durable agent name of %d bytes is too long; %s", len(name), wire.NameRule)
	case !quote:
		return errors.New("the durable agent name is not allowed; " + wire.NameRule)
	}
	return fmt.Errorf("the durable agent name %q is not allowed; %s", name, wire.NameRule)
}

// File is the content of sources.json.
type File struct {
	Version int      `json:"version"`
	Sources []Source `json:"sources"`
}

// Get returns the durable agent called name.
func (f *File) Get(name string) (Source, bool) {
	for _, s := range f.Sources {
		if s.Name == name {
			return s, true
		}
	}
	return Source{}, false
}

// Add attaches s, which must be valid and have a name not yet attached.
func (f *File) Add(s Source) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, ok := f.Get(s.Name); ok {
		return fmt.Errorf("a durable agent named %s is already attached; detach it first with: collie durable detach %s", s.Name, s.Name)
	}
	f.Sources = append(f.Sources, s)
	return nil
}

// Remove detaches the durable agent called name.
func (f *File) Remove(name string) error {
	if err := CheckName(name); err != nil {
		return err
	}
	for i, s := range f.Sources {
		if s.Name == name {
			// slices.Delete also clears the freed slot, token included.
			f.Sources = slices.Delete(f.Sources, i, i+1)
			return nil
		}
	}
	return fmt.Errorf("no durable agent named %s is attached; see: collie durable list", name)
}

// Validate checks every source and that no name appears twice. An entry
// Load refused (Refused set) is checked but for its socket path.
func (f *File) Validate() error {
	seen := make(map[string]bool, len(f.Sources))
	for i, s := range f.Sources {
		check := s.Validate
		if s.Refused != "" {
			check = s.validate
		}
		if err := checkName(s.Name, false); err != nil {
			return fmt.Errorf("source %d: %w", i+1, err)
		}
		if err := check(); err != nil {
			return fmt.Errorf("source %d: %w", i+1, err)
		}
		if seen[s.Name] {
			return fmt.Errorf("source %d: the name %s is used twice; keep one", i+1, s.Name)
		}
		seen[s.Name] = true
	}
	return nil
}

// refuseSocketPaths marks each entry whose socket path is not in the form
// the bridge accepts, with a sentence that says what to do in the file at
// path; the others are left as they are.
func (f *File) refuseSocketPaths(path string) {
	for i := range f.Sources {
		s := &f.Sources[i]
		if s.validate() != nil {
			continue // a bad entry of another kind: Validate says so
		}
		if err := s.checkSocketPath(); err != nil {
			s.Refused = err.Error() + "; fix it in " + path + ", or attach the agent again: collie durable detach " + s.Name + " && collie durable attach " + s.Name + " --socket FULL-PATH"
		}
	}
}
