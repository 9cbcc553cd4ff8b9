package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestMCPRuntimeDirFallback: an MCP client that starts collie mcp
// without $XDG_RUNTIME_DIR (the MCP SDK for TypeScript passes only HOME,
// LOGNAME, PATH, SHELL, TERM and USER) still finds the agent in the
// user's /run/user/UID, but only in a directory of the user's own with
// mode 0700; a value that is set is kept.
func TestMCPRuntimeDirFallback(t *testing.T) {
	uid := os.Getuid()
	tests := []struct {
		name  string
		env   string
		setup func(t *testing.T, base string) int // makes the folder, returns the uid to look for
		want  func(base string, uid int) string
	}{
		{"set is kept", "/run/user/7", func(t *testing.T, base string) int { mk(t, base, uid, 0o700); return uid },
			func(string, int) string { return "/run/user/7" }},
		{"unset, the user's 0700 folder", "", func(t *testing.T, base string) int { mk(t, base, uid, 0o700); return uid },
			func(base string, uid int) string { return filepath.Join(base, strconv.Itoa(uid)) }},
		{"unset, no folder", "", func(t *testing.T, base string) int { return uid },
			func(string, int) string { return "" }},
		{"unset, a folder others can enter", "", func(t *testing.T, base string) int { mk(t, base, uid, 0o755); return uid },
			func(string, int) string { return "" }},
		{"unset, another user's folder", "", func(t *testing.T, base string) int { mk(t, base, uid+1, 0o700); return uid + 1 },
			func(string, int) string { return "" }},
		{"unset, a link to the user's folder", "", func(t *testing.T, base string) int {
			mk(t, base, uid+2, 0o700)
			if err := os.Symlink(filepath.Join(base, strconv.Itoa(uid+2)), filepath.Join(base, strconv.Itoa(uid))); err != nil {
				t.Fatal(err)
			}
			return uid
		}, func(string, int) string { return "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			look := tc.setup(t, base)
			getenv := func(k string) string {
				if k == "XDG_RUNTIME_DIR" {
					return tc.env
				}
				return "other"
			}
			// Another user's folder is made by this user: it is another's
			// by its owner alone when the test looks for uid+1.
			got := withRuntimeDir(getenv, base, look, os.Lstat)
			if g, w := got("XDG_RUNTIME_DIR"), tc.want(base, look); g != w {
				t.Errorf("XDG_RUNTIME_DIR = %q, want %q", g, w)
			}
			if got("HOME") != "other" {
				t.Error("other variables changed")
			}
		})
	}
}

func mk(t *testing.T, base string, uid int, mode os.FileMode) {
	t.Helper()
	dir := filepath.Join(base, strconv.Itoa(uid))
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}
