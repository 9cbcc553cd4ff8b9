package loginservice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Identity is who a grant and a session belong to, as the platform proved
// it (R5).
type Identity struct {
	Agent  string `json:"agent"`  // the platform's agent id (SLOCK_AGENT_ID's rule: ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$)
	Server string `json:"server"` // the platform server's id (same rule)
	App    string `json:"app"`    // the platform's installation id of the collie app (same rule)
}

// AgentKey is one agent: its id on its platform server, exactly as the
// platform signed them (case and every byte kept). What there is one of
// per agent is keyed by it: its live session (a new login replaces the
// old), its board, its share of the pending grants. The app installation
// is left out: an agent whose collie app was installed again is the same
// agent.
type AgentKey struct {
	Server string
	Agent  string
}

// Key is id's agent.
func (id Identity) Key() AgentKey { return AgentKey{Server: id.Server, Agent: id.Agent} }

// Options configure Open.
type Options struct {
	Path string           // the store's file, e.g. $XDG_STATE_HOME/collie/agent-sessions.json (0600; its folder exists, 0700)
	Now  func() time.Time // nil: time.Now
	Log  *slog.Logger     // nil: discard
}

// Tokens are a session's credentials as minted, handed to the caller once.
type Tokens struct {
	Access         string
	AccessExpires  time.Time
	Refresh        string
	RefreshExpires time.Time
}

// String never shows a token.
func (t Tokens) String() string {
	return fmt.Sprintf("loginservice.Tokens{access until %s, refresh until %s}",
		t.AccessExpires.Format(time.RFC3339), t.RefreshExpires.Format(time.RFC3339))
}

// GoString is String, so %#v shows no token either.
func (t Tokens) GoString() string { return t.String() }

// LogValue keeps tokens out of slog.
func (t Tokens) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("access_expires", t.AccessExpires), slog.Time("refresh_expires", t.RefreshExpires))
}

// Session is the live session an access token belongs to.
type Session struct {
	Chain          string // the chain's id
	Identity       Identity
	AccessExpires  time.Time
	RefreshExpires time.Time
}

// Chain is one login (an exchange) and its rotations, as `collie agents
// list` shows it.
type Chain struct {
	ID             string // random, 12 hex characters; not a secret; shown to the human
	Identity       Identity
	Created        time.Time // the exchange
	Refreshed      time.Time // the last rotation (zero: never)
	AccessExpires  time.Time
	RefreshExpires time.Time
	Revoked        time.Time // zero: live
	RevokedWhy     string    // "logout", "reuse of a rotated refresh token", "revoked by the user", "a newer login" ...
}

// Error is a refusal from the closed set (loginwire.Code*), with the HTTP
// status the service answers with.
type Error struct {
	Code    string // one of loginwire's closed set
	Status  int    // 400 invalid, binding_mismatch, grant_proof_mismatch; 409 expired, consumed; 503 temporarily_unavailable
	Message string // a sentence for the caller; never a credential
}

func (e *Error) Error() string { return e.Message }

// refuse builds the *Error for code, with its status.
func refuse(code, message string) *Error {
	status := http.StatusBadRequest
	switch code {
	case loginwire.CodeExpired, loginwire.CodeConsumed:
		status = http.StatusConflict
	case loginwire.CodeTemporarilyUnavailable:
		status = http.StatusServiceUnavailable
	}
	return &Error{Code: code, Status: status, Message: message}
}

// Why a chain was revoked.
const (
	WhyLogout     = "logout"
	WhyReuse      = "reuse of a rotated refresh token"
	WhyUser       = "revoked by the user"
	WhyNewerLogin = "a newer login"
)

// Limits (see the package doc).
const (
	maxPendingGrants   = 1000
	maxPendingPerAgent = 16
	maxLiveChains      = 1 // per agent: a new login replaces the one before
	maxRotated         = 64
	maxProofMismatches = 5
	keepEnded          = 7 * 24 * time.Hour
	maxFileBytes       = 64 << 20
)

// Store is the bridge's agent-login state: grants and session chains,
// kept in one file. Its methods are safe for concurrent use.
type Store struct {
	path  string
	now   func() time.Time
	log   *slog.Logger
	write func(path string, data []byte) error // atomicfile.Write; tests make it fail

	mu      sync.Mutex
	st      *state
	watches map[*watch]struct{} // Watch and WatchAgent, ended by notify
}

// Open loads the store at o.Path, or starts an empty one when no file is
// there yet (the first write creates it). A file that cannot be read whole
// is an error naming it; it is never reset.
func Open(o Options) (*Store, error) {
	if o.Path == "" {
		return nil, errors.New("loginservice: no path for the agent session store")
	}
	s := &Store{path: o.Path, now: o.Now, log: o.Log, write: atomicfile.Write}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if removed, err := atomicfile.RemoveStale(o.Path); err != nil {
		s.log.Warn("could not remove a leftover temporary file of the agent session store", "path", o.Path, "err", err)
	} else if len(removed) > 0 {
		s.log.Info("removed leftover temporary files of the agent session store", "files", removed)
	}
	data, err := s.read()
	if err != nil {
		return nil, err
	}
	if data == nil {
		s.st = newState()
		return s, nil
	}
	st, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("the agent session store %s cannot be read: %w; move it away (mv %s %s.broken) and start the bridge again, after which every agent logs in again", o.Path, err, o.Path, o.Path)
	}
	s.st = st
	return s, nil
}

// read returns the file's bytes, nil when there is no file. A file that
// group or others may read is tightened to 0600, with a log line.
func (s *Store) read() ([]byte, error) {
	f, err := os.OpenFile(s.path, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the agent session store: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat the agent session store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("the agent session store %s is not a regular file; move it away and start the bridge again", s.path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return nil, fmt.Errorf("tighten the agent session store %s to 0600: %w", s.path, err)
		}
		s.log.Warn("tightened the agent session store to 0600", "path", s.path, "was", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the agent session store: %w", err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("the agent session store %s is larger than %d MiB; move it away (mv %s %s.broken) and start the bridge again, after which every agent logs in again", s.path, maxFileBytes>>20, s.path, s.path)
	}
	return data, nil
}

// save prunes next, writes it and, when the write succeeded or keep is
// set, makes it the state. keep is for changes that fail closed (a
// revocation, a wrong verifier's count): they hold in memory even when
// the disk refuses them, and the next write saves them.
func (s *Store) save(next *state, now time.Time, keep bool) error {
	next.prune(now)
	data, err := encode(next)
	if err == nil {
		err = s.write(s.path, data)
	}
	if err == nil || keep {
		next.reindex()
		s.st = next
		s.notify()
	}
	if err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelError, "could not write the agent session store",
			slog.String("path", s.path), slog.Any("err", err), slog.Bool("kept_in_memory", keep))
		return fmt.Errorf("write the agent session store: %w", err)
	}
	return nil
}

// unavailable is the refusal for a failed write.
func unavailable() *Error {
	return refuse(loginwire.CodeTemporarilyUnavailable,
		"The bridge could not save its agent session store; try again in a moment, and if it keeps failing, look at the bridge's log (journalctl --user -u collie).")
}
