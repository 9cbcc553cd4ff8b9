package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/collie-linux/collie/internal/linux/fileowner"
)

// Push is [push]: how a new question reaches the user when no page is
// open (D4, D9). See collie.toml(5).
type Push struct {
	// Preview puts the question's text in a push's body; off by default,
	// because a lock screen is public.
	Preview bool `toml:"preview"`
	// Desktop: nil (unset) shows desktop notifications when a session bus
	// and a notification server exist; true asks for them (a warning when
	// there are none); false turns them off.
	Desktop *bool `toml:"desktop"`
	// WebPush: nil (unset) or true sends Web Push to the browsers of paired
	// devices that turned notifications on, whenever the device API
	// listens (the page offers it after pairing); false turns it off.
	WebPush *bool `toml:"webpush"`
	// Contact is who a push service's operator can reach about this
	// bridge's pushes: the VAPID contact (RFC 8292's "sub"), a mailto: or
	// https: URI; "" is the project's page (DefaultContact).
	Contact string `toml:"contact"`
	// Ntfy is [push.ntfy]; nil when the table is absent.
	Ntfy *Ntfy `toml:"ntfy"`
}

// DefaultContact is the VAPID contact when [push] contact is not set.
const DefaultContact = "https://github.com/collie-linux/collie"

// ContactURI is [push] contact, or DefaultContact.
func (p Push) ContactURI() string {
	if p.Contact == "" {
		return DefaultContact
	}
	return p.Contact
}

// maxContact bounds [push] contact: it goes into every signed token.
const maxContact = 256

// check checks [push] as Load reads it: contact is a mailto: address or
// an https: page.
func (p Push) check() error {
	c := p.Contact
	if c == "" {
		return nil
	}
	fix := `set it to mailto:you@example.org or to an https:// page where a push service's operator can reach you, or remove it`
	if len(c) > maxContact {
		return fmt.Errorf("[push] contact is %d bytes, over %d; %s", len(c), maxContact, fix)
	}
	for _, r := range c {
		if r <= ' ' || r == 0x7f || r > 0x7e {
			return fmt.Errorf("[push] contact %q holds a space or a character that is not plain ASCII; %s", c, fix)
		}
	}
	u, err := url.Parse(c)
	if err != nil {
		return fmt.Errorf("[push] contact %q is not a URI; %s", c, fix)
	}
	switch strings.ToLower(u.Scheme) {
	case "mailto":
		local, domain, ok := strings.Cut(u.Opaque, "@")
		if !ok || local == "" || domain == "" || strings.ContainsAny(u.Opaque, "?,") || u.RawQuery != "" {
			return fmt.Errorf("[push] contact %q is not one mail address; %s", c, fix)
		}
	case "https":
		if u.Host == "" || u.User != nil || u.Hostname() == "" {
			return fmt.Errorf("[push] contact %q is not an https:// page (a host, no user name); %s", c, fix)
		}
	default:
		return fmt.Errorf("[push] contact %q is neither mailto: nor https:; %s", c, fix)
	}
	return nil
}

// Ntfy is [push.ntfy]: pushes through an ntfy server to the ntfy app.
type Ntfy struct {
	// Server is the server's base URL; "" is DefaultNtfyServer.
	Server string `toml:"server"`
	// Topic is the topic the ntfy app subscribes to.
	Topic string `toml:"topic"`
	// TokenFile names a file (mode 0600 or stricter, the user's own)
	// holding the access token; TokenEnv an environment variable holding
	// it. At most one; neither publishes without a token.
	TokenFile string `toml:"token_file"`
	TokenEnv  string `toml:"token_env"`
	// Priority is min, low, default, high, max or urgent; "" is default.
	Priority string `toml:"priority"`
}

// DefaultNtfyServer is the public ntfy server.
const DefaultNtfyServer = "https://ntfy.sh"

// ServerURL returns the configured server, or the default.
func (n Ntfy) ServerURL() string {
	if n.Server == "" {
		return DefaultNtfyServer
	}
	return n.Server
}

// maxTokenFile bounds a token file: a token is at most 4096 bytes.
const maxTokenFile = 8192

// Token reads the access token from token_file or token_env (getenv is
// os.Getenv or a test's); "" when neither is set. An error names the
// setting and says what to do; it never holds the token.
func (n Ntfy) Token(getenv func(string) string) (string, error) {
	switch {
	case n.TokenFile != "" && n.TokenEnv != "":
		return "", errors.New("[push.ntfy] has both token_file and token_env; keep one")
	case n.TokenEnv != "":
		v := strings.TrimSpace(getenv(n.TokenEnv))
		if v == "" {
			return "", fmt.Errorf("[push.ntfy] token_env names %s, which is not set in the daemon's environment; set it (for collie.service: systemctl --user set-environment %s=..., or an Environment= line in a drop-in), or use token_file", n.TokenEnv, n.TokenEnv)
		}
		return v, nil
	case n.TokenFile != "":
		return readTokenFile(n.TokenFile)
	}
	return "", nil
}

// readTokenFile reads a token file that only its owner, the user, can
// read.
func readTokenFile(path string) (string, error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("[push.ntfy] token_file %q is not an absolute path; give its full path", path)
	}
	lfi, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("[push.ntfy] token_file: %w; write the token to it with mode 0600 (umask 077; cat > %s)", err, path)
	}
	if !lfi.Mode().IsRegular() {
		return "", fmt.Errorf("[push.ntfy] token_file %s is not a regular file (a link is not followed)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("[push.ntfy] token_file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("[push.ntfy] token_file: %w", err)
	}
	if !os.SameFile(lfi, fi) {
		return "", fmt.Errorf("[push.ntfy] token_file %s changed while it was read; try again", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("[push.ntfy] token_file %s has mode %04o, so others can read the token; run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	if uid, ok := fileowner.UID(fi); ok && uid != os.Getuid() {
		return "", fmt.Errorf("[push.ntfy] token_file %s belongs to user %d, not to you", path, uid)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("[push.ntfy] token_file: %w", err)
	}
	if len(data) > maxTokenFile {
		return "", fmt.Errorf("[push.ntfy] token_file %s is over %d bytes, so it is not a token", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("[push.ntfy] token_file %s is empty; write the token to it", path)
	}
	return tok, nil
}
