package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secret = "tk_0123456789abcdefghijklmnopqrstuv"

// TestPushSection: [push] and [push.ntfy] decode with every key; an
// unknown key in either is refused, naming it (as every table of
// config.toml).
func TestPushSection(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, []byte("[push]\npreview = true\ndesktop = false\n\n[push.ntfy]\nserver = \"https://ntfy.example.com\"\ntopic = \"collie-abc\"\ntoken_env = \"NTFY_TOKEN\"\npriority = \"high\"\n"), 0o600)
	f, _, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Push.Preview || f.Push.Desktop == nil || *f.Push.Desktop || f.Push.Ntfy == nil {
		t.Fatalf("push %+v", f.Push)
	}
	if n := *f.Push.Ntfy; n.ServerURL() != "https://ntfy.example.com" || n.Topic != "collie-abc" || n.TokenEnv != "NTFY_TOKEN" || n.Priority != "high" {
		t.Fatalf("ntfy %+v", n)
	}
	if (Ntfy{}).ServerURL() != DefaultNtfyServer {
		t.Fatal("no default server")
	}
	for _, tc := range []struct{ content, want string }{
		{"[push]\nsound = true\n", `unknown setting "push.sound"`},
		{"[push.ntfy]\ntoken = \"" + secret + "\"\n", `unknown setting "push.ntfy.token"`},
		{"[push]\nPreview = true\n", "Preview"},
	} {
		os.WriteFile(p, []byte(tc.content), 0o600)
		_, _, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.content, err, tc.want)
		}
	}
}

// TestNtfyToken: the token comes from a file only its owner can read, or
// from an environment variable; every error says what to do and none holds
// the token.
func TestNtfyToken(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(secret+"\n"), 0o600)
		os.Chmod(p, mode)
		return p
	}
	good := file("good", 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	env := func(k string) string {
		if k == "NTFY_TOKEN" {
			return " " + secret + " "
		}
		return ""
	}
	for _, tc := range []struct {
		name string
		n    Ntfy
		want string // "" : the token
	}{
		{"file_0600", Ntfy{TokenFile: good}, ""},
		{"file_0400", Ntfy{TokenFile: file("ro", 0o400)}, ""},
		{"file_0644", Ntfy{TokenFile: file("open", 0o644)}, "has mode 0644, so others can read the token; run: chmod 600"},
		{"file_0640", Ntfy{TokenFile: file("group", 0o640)}, "has mode 0640"},
		{"symlink", Ntfy{TokenFile: link}, "is not a regular file (a link is not followed)"},
		{"folder", Ntfy{TokenFile: dir}, "is not a regular file"},
		{"missing", Ntfy{TokenFile: filepath.Join(dir, "none")}, "write the token to it with mode 0600"},
		{"relative", Ntfy{TokenFile: "token"}, "is not an absolute path"},
		{"empty", Ntfy{TokenFile: empty}, "is empty"},
		{"env", Ntfy{TokenEnv: "NTFY_TOKEN"}, ""},
		{"env_unset", Ntfy{TokenEnv: "OTHER"}, "OTHER, which is not set in the daemon's environment"},
		{"both", Ntfy{TokenEnv: "NTFY_TOKEN", TokenFile: good}, "has both token_file and token_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := tc.n.Token(env)
			if tc.want == "" {
				if err != nil || tok != secret {
					t.Fatalf("token %q, err %v", tok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the error holds the token: %v", err)
			}
		})
	}
	if tok, err := (Ntfy{}).Token(env); tok != "" || err != nil {
		t.Fatalf("no token set: %q %v", tok, err)
	}
}

// TestPushContact: [push] contact, the VAPID contact a push service's
// operator sees, is a mailto: address or an https: page; anything else is
// refused when config.toml is read, naming the setting and the fix. Unset,
// it is the project's page.
func TestPushContact(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	for _, tc := range []struct {
		contact string
		ok      bool
	}{
		{"mailto:admin@example.org", true},
		{"MAILTO:admin@example.org", true},
		{"https://example.org/contact", true},
		{"https://example.org", true},
		{"http://example.org", false},
		{"mailto:", false},
		{"mailto:admin", false},
		{"mailto:a@b.org,c@d.org", false},
		{"mailto:a@b.org?subject=x", false},
		{"https://user:pw@example.org", false},
		{"https:///nohost", false},
		{"admin@example.org", false},
		{"javascript:alert(1)", false},
		{"mailto:a b@example.org", false},
		{"https://example.org/\u202e", false},
		{"https://example.org/" + strings.Repeat("a", 300), false},
	} {
		t.Run(tc.contact, func(t *testing.T) {
			os.WriteFile(p, []byte("[push]\ncontact = \""+tc.contact+"\"\n"), 0o600)
			f, _, err := Load(p)
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.ok && f.Push.ContactURI() != tc.contact:
				t.Fatalf("contact %q", f.Push.ContactURI())
			case !tc.ok && err == nil:
				t.Fatal("taken")
			case !tc.ok && (!strings.Contains(err.Error(), "[push] contact") || !strings.Contains(err.Error(), "mailto:you@example.org")):
				t.Fatalf("the error does not name the setting and the fix: %v", err)
			}
		})
	}
	if (Push{}).ContactURI() != DefaultContact {
		t.Fatal("no default contact")
	}
}
