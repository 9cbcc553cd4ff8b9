package loginservice

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// TestOpenRefusesCorruptFile_R5: a file Open cannot read whole is an error
// that names the file and says to move it away; the file is left as it was.
func TestOpenRefusesCorruptFile_R5(t *testing.T) {
	f := newFixture(t)
	f.login(alice)
	good, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	digest := f.s.st.chains[f.s.List()[0].ID].Access
	for _, c := range []struct{ name, data string }{
		{"empty", ""},
		{"not JSON", "garbage"},
		{"cut short", string(good[:len(good)/2])},
		{"unknown member", strings.Replace(string(good), `"schema"`, `"extra": 1, "schema"`, 1)},
		{"member twice", strings.Replace(string(good), `"schema"`, `"grants": [], "schema"`, 1)},
		{"wrong case", strings.Replace(string(good), `"chains"`, `"Chains"`, 1)},
		{"other schema", strings.Replace(string(good), fileSchema, "collie-agent-sessions.v0", 1)},
		{"bad digest", strings.Replace(string(good), digest, strings.ToUpper(digest), 1)},
		{"bad identity", strings.Replace(string(good), alice.Agent, "../x", 1)},
		{"bad time", strings.Replace(string(good), `"created": "2026-`, `"created": "1999-`, 1)},
		{"trailing data", string(good) + "{}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.data == string(good) {
				t.Fatal("the case changes nothing")
			}
			if err := os.WriteFile(f.path, []byte(c.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(Options{Path: f.path, Now: f.clock.Now})
			if err == nil {
				t.Fatal("Open accepted a corrupt file")
			}
			if msg := err.Error(); !strings.Contains(msg, f.path) || !strings.Contains(msg, "move it away") {
				t.Fatalf("error %q does not name the file and the fix", msg)
			}
			if b, _ := os.ReadFile(f.path); string(b) != c.data {
				t.Fatal("Open changed a corrupt file")
			}
		})
	}
}

// TestOpenFile_R5: no file is an empty store, made at the first write; a
// file group or others can read is tightened to 0600; a symbolic link is
// refused.
func TestOpenFile_R5(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agent-sessions.json")
	s, err := Open(Options{Path: path})
	if err != nil || len(s.List()) != 0 {
		t.Fatalf("Open of no file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("Open wrote a file")
	}
	if _, _, err := s.Grant(alice, loginwire.Challenge("x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Path: path}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Path: link}); err == nil {
		t.Fatal("Open followed a symbolic link")
	}
	if _, err := Open(Options{}); err == nil {
		t.Fatal("Open without a path")
	}
}

// TestEncodeStable_R5: the same state writes the same bytes, and what is
// written reads back equal.
func TestEncodeStable_R5(t *testing.T) {
	f := newFixture(t)
	f.grant(alice)
	tok := f.login(bob)
	f.clock.Add(time.Minute)
	f.s.Refresh(tok.Refresh)
	f.login(alice)
	f.s.RevokeAgent(alice.Agent)
	a, err := encode(f.s.st)
	if err != nil {
		t.Fatal(err)
	}
	st, err := decode(a)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := encode(st)
	if !bytes.Equal(a, b) || !reflect.DeepEqual(st, f.s.st) {
		t.Fatalf("round trip differs:\n%s\n%s", a, b)
	}
	disk, _ := os.ReadFile(f.path)
	if !bytes.Equal(disk, a) {
		t.Fatal("the file is not the state's encoding")
	}
}
