package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/collie-linux/collie/internal/protocol/tomlstrict"
)

// File is the content of config.toml. A key Collie does not know is
// refused, so that a setting meant for a later version, or misspelt, is
// never silently ignored. See collie.toml(5).
type File struct {
	Devices Devices `toml:"devices"`
	Push    Push    `toml:"push"`
	Agents  Agents  `toml:"agents"`
}

// Agents is [agents]: agents on an agent platform that log in to the
// bridge with collie login (R1, R5). See collie.toml(5).
type Agents struct {
	// PlatformKeyFile names the platform's Ed25519 public key (PEM) that
	// signs the assertion proving which agent calls the agent-login
	// action; "" leaves agent login off (sessions already made still
	// work until they expire or are revoked).
	PlatformKeyFile string `toml:"platform_key_file" example:"\"/etc/collie/platform-key.pem\""`
}

// Devices is [devices]: where paired phones and browsers reach the bridge.
type Devices struct {
	// Listen is host:port; nil means DefaultDeviceListen, and "" turns the
	// device API off.
	Listen *string `toml:"listen" example:"\"127.0.0.1:8780\""`
	// TLS is "auto" (plain HTTP on loopback, TLS beyond it), "on" or "off".
	TLS string `toml:"tls" example:"\"auto\""`
	// TLSCert and TLSKey are the user's own certificate; without them a
	// self-signed one is made in the state folder.
	TLSCert string `toml:"tls_cert" example:"\"/home/me/.config/collie/cert.pem\""`
	TLSKey  string `toml:"tls_key" example:"\"/home/me/.config/collie/key.pem\""`
	// PublicURL is the https:// origin a phone opens (a reverse proxy,
	// tailscale serve, or this listener with the user's own
	// certificate); "" when unset. See PublicOrigin.
	PublicURL string `toml:"public_url" example:"\"https://collie.example.ts.net\""`
	// ProxyHeaders names the forwarded headers a reverse proxy on this
	// machine sets: "" (none are trusted), "x-forwarded" or "forwarded".
	ProxyHeaders string `toml:"proxy_headers" example:"\"x-forwarded\""`
}

// DefaultDeviceListen is where the device API listens unless configured:
// loopback only.
const DefaultDeviceListen = "127.0.0.1:8780"

// DeviceListen returns the configured listen address, and false when the
// device API is turned off.
func (d Devices) DeviceListen() (string, bool) {
	if d.Listen == nil {
		return DefaultDeviceListen, true
	}
	return *d.Listen, *d.Listen != ""
}

// ConfigFile is $XDG_CONFIG_HOME/collie/config.toml.
func (p Paths) ConfigFile() string { return filepath.Join(p.Config, "config.toml") }

// Load reads the config file at path. A missing file means the defaults
// (exists is false). A file that is not TOML, or that has any key Collie
// does not know, is an error that names the line and says what to do.
func Load(path string) (f File, exists bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return File{}, false, nil
	}
	if err != nil {
		return File{}, false, fmt.Errorf("read %s: %w; make it readable by you, or remove it to use the defaults", path, err)
	}
	if err := tomlstrict.Decode(data, &f); err != nil {
		var ce *tomlstrict.CaseError
		if errors.As(err, &ce) {
			return File{}, true, fmt.Errorf("%s, %v; see collie.toml(5)", path, ce)
		}
		var te *tomlstrict.TypeError
		if errors.As(err, &te) {
			return File{}, true, fmt.Errorf("%s, %v; see collie.toml(5)", path, te)
		}
		var sm *toml.StrictMissingError
		if errors.As(err, &sm) && len(sm.Errors) > 0 {
			row, _ := sm.Errors[0].Position()
			return File{}, true, fmt.Errorf("%s, line %d: unknown setting %q; remove it, or see collie.toml(5) for the settings there are",
				path, row, strings.Join(sm.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return File{}, true, fmt.Errorf("%s, line %d column %d: %s; fix the file, or remove it to use the defaults", path, row, col, de.Error())
		}
		return File{}, true, fmt.Errorf("%s: %v; fix the file, or remove it to use the defaults", path, err)
	}
	if err := f.Devices.check(); err != nil {
		return File{}, true, fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Push.check(); err != nil {
		return File{}, true, fmt.Errorf("%s: %w", path, err)
	}
	if k := f.Agents.PlatformKeyFile; k != "" && !filepath.IsAbs(k) {
		return File{}, true, fmt.Errorf("%s: [agents] platform_key_file %q is not an absolute path; give the full path of the platform's public key", path, k)
	}
	return f, true, nil
}
