package loginstore

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Schema is the session record's schema, and TokenType its only token type.
const (
	Schema    = "raft-cli-agent-session.v1"
	TokenType = "Bearer"
)

// MaxFile is the largest auth.json Read accepts (Collie's cap; the package
// has none).
const MaxFile = 64 << 10

// validService is the package's SERVICE_SLUG_RE,
// ^[a-z0-9][a-z0-9._-]{0,79}$. The package's patterns are checked by
// hand, not with regexp: collie's hook program links this package for
// Admit and starts once per tool call, and regexp's start-up is work it
// never needs. A fuzz test holds each check to its pattern.
func validService(s string) bool {
	if len(s) < 1 || len(s) > 80 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || isDigit(c)
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// shaped reports whether s starts with pattern's shape: a 'd' in pattern
// is any ASCII digit, any other byte is itself.
func shaped(s, pattern string) bool {
	if len(s) < len(pattern) {
		return false
	}
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == 'd' && !isDigit(s[i]) || pattern[i] != 'd' && s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// Session is what the service's token endpoint returns: the six keys of
// raft-cli-agent-session.v1. RefreshExpiresAt nil is JSON null.
type Session struct {
	Schema           string  `json:"schema"`
	TokenType        string  `json:"token_type"`
	AccessToken      string  `json:"access_token"`
	AccessExpiresAt  string  `json:"access_expires_at"`
	RefreshToken     string  `json:"refresh_token"`
	RefreshExpiresAt *string `json:"refresh_expires_at"`
}

// Record is a stored session: the session's keys, then the service, the
// API base and when it was written, in the package's order.
type Record struct {
	Session
	Service   string `json:"service"`
	APIBase   string `json:"api_base"`
	UpdatedAt string `json:"updated_at"`
}

// AccessExpiry is when the access token expires.
func (s *Session) AccessExpiry() time.Time {
	t, _ := ParseTime(s.AccessExpiresAt)
	return t
}

// RefreshExpiry is when the refresh token expires; ok is false for null
// (no expiry given).
func (s *Session) RefreshExpiry() (t time.Time, ok bool) {
	if s.RefreshExpiresAt == nil {
		return time.Time{}, false
	}
	t, _ = ParseTime(*s.RefreshExpiresAt)
	return t, true
}

// Check says what is wrong with s, naming the key and never its value.
// It is the rule both Write and Read hold a session to.
func (s *Session) Check() error {
	switch {
	case s.Schema != Schema:
		return errors.New("schema is not " + Schema)
	case s.TokenType != TokenType:
		return errors.New("token_type is not " + TokenType)
	case !ValidToken(s.AccessToken):
		return errors.New("access_token is not 1 to 4096 bytes of printable ASCII")
	case !ValidToken(s.RefreshToken):
		return errors.New("refresh_token is not 1 to 4096 bytes of printable ASCII")
	case !validTime(s.AccessExpiresAt):
		return errors.New("access_expires_at is not an RFC 3339 time")
	case s.RefreshExpiresAt != nil && !validTime(*s.RefreshExpiresAt):
		return errors.New("refresh_expires_at is not an RFC 3339 time or null")
	}
	return nil
}

// ValidToken reports whether tok is 1 to 4096 bytes of printable ASCII
// with no space: what may go into an Authorization header.
func ValidToken(tok string) bool {
	if len(tok) == 0 || len(tok) > 4096 {
		return false
	}
	return printable(tok)
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// rfc3339Shape reports whether s is the reference CLI's RFC 3339
// date-time: a T, seconds, an optional fraction, and Z or a numeric
// offset (^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$).
func rfc3339Shape(s string) bool {
	const head = "dddd-dd-ddTdd:dd:dd"
	if !shaped(s, head) {
		return false
	}
	s = s[len(head):]
	if strings.HasPrefix(s, ".") {
		n := 1
		for n < len(s) && isDigit(s[n]) {
			n++
		}
		if n == 1 {
			return false
		}
		s = s[n:]
	}
	return s == "Z" || len(s) == 6 && (s[0] == '+' || s[0] == '-') && shaped(s[1:], "dd:dd")
}

// ParseTime parses an RFC 3339 date-time as the reference CLI accepts it.
func ParseTime(s string) (time.Time, bool) {
	if !rfc3339Shape(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

func validTime(s string) bool {
	_, ok := ParseTime(s)
	return ok
}

// Path is the session's file, $SLOCK_HOME/agents/<id>/integrations/<service>/auth.json,
// with the slug and id checked so the path cannot leave that folder.
func Path(e Env, service string) (string, error) {
	if !validService(service) {
		return "", errors.New("invalid service slug")
	}
	if !loginwire.ValidID(e.AgentID) {
		return "", errors.New("invalid agent id")
	}
	if !filepath.IsAbs(e.Home) {
		return "", errors.New("SLOCK_HOME is not an absolute path")
	}
	root := filepath.Join(e.Home, "agents", e.AgentID, "integrations")
	p := filepath.Join(root, service, "auth.json")
	if filepath.Dir(filepath.Dir(p)) != root {
		return "", errors.New("resolved store path escapes the integrations root")
	}
	return p, nil
}

// Dir makes sure the service's folder and those between it and SLOCK_HOME
// exist with mode 0700 (repairing a wider one, as the package does;
// SLOCK_HOME itself is neither made nor changed) and returns it. The CLI
// keeps its refresh lock there.
func Dir(e Env, service string) (string, error) {
	if _, err := Path(e, service); err != nil {
		return "", err
	}
	dir := e.Home
	for _, seg := range []string{"agents", e.AgentID, "integrations", service} {
		dir = filepath.Join(dir, seg)
		if err := ensureSecureDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func ensureSecureDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("agent-session-store: make %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("agent-session-store: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("agent-session-store: store path component %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("agent-session-store: %w", err)
		}
	}
	return nil
}

// Encode is the record's bytes: JSON.stringify(record, null, 2) + "\n".
func Encode(r Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		panic(err) // a struct of strings always encodes
	}
	return b.Bytes()
}

// ISOTime is t as JavaScript's Date.prototype.toISOString writes it.
func ISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Write stores s for service with apiBase, updated now, atomically: a
// same-folder temp file, 0600, written, synced, closed and renamed over
// auth.json, then the folder synced. On failure the temp is removed and
// the old session is left as it was. It returns the file's path.
func Write(e Env, service string, s Session, apiBase string, now time.Time) (string, error) {
	return writeWith(e, service, s, apiBase, now, func(w io.Writer, b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

func writeWith(e Env, service string, s Session, apiBase string, now time.Time, write func(io.Writer, []byte) error) (string, error) {
	path, err := Path(e, service)
	if err != nil {
		return "", err
	}
	if err := s.Check(); err != nil {
		return "", fmt.Errorf("agent-session-store: refusing to store the session: %w", err)
	}
	if apiBase == "" || !printable(apiBase) {
		return "", errors.New("agent-session-store: refusing to store the session: api_base is not printable ASCII")
	}
	dir, err := Dir(e, service)
	if err != nil {
		return "", err
	}
	payload := Encode(Record{Session: s, Service: service, APIBase: apiBase, UpdatedAt: ISOTime(now)})
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, ".auth."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("agent-session-store: %w", err)
	}
	fail := func(err error) (string, error) {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp)
		return "", fmt.Errorf("agent-session-store: %w", err)
	}
	if err := write(f, payload); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	err = f.Close()
	f = nil
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return path, syncDir(dir)
}

// Remove deletes the service's auth.json, and nothing else; no file is
// not an error. It reports whether there was one.
func Remove(e Env, service string) (bool, error) {
	path, err := Path(e, service)
	if err != nil {
		return false, err
	}
	if err := os.Remove(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return true, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
