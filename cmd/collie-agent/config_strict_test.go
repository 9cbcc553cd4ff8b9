package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadConfigExactCase (C3): keys are case-sensitive.
// Before, "callercheck = \"off\"" turned the caller check off through
// go-toml's case-insensitive match, though the documented key is
// CallerCheck; "[[Belt]]" and "ID" set belt buttons the same way.
func TestLoadConfigExactCase(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"C3_callercheck_lower_case", "callercheck = \"off\"\n", `line 1 column 1: unknown setting "callercheck"; setting names are case-sensitive: write "CallerCheck"`},
		{"title_upper", "Title = \"x\"\n", `write "title"`},
		{"belt_table", "[[Belt]]\nid = \"a\"\nlabel = \"A\"\ncommand = [\"/bin/true\"]\n", `line 1 column 3: unknown setting "Belt"`},
		{"belt_key", "[[belt]]\nID = \"a\"\nlabel = \"A\"\ncommand = [\"/bin/true\"]\n", `line 2 column 1: unknown setting "belt.ID"`},
		{"always_key", "[always]\nEnabled = true\n", `write "enabled"`},
		{"https_table", "[HTTPS]\n", `unknown setting "HTTPS"`},
		{"key_twice", "CallerCheck = \"on\"\nCallerCheck = \"off\"\n", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "demo.toml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadConfig(path, "demo")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want it to name %s and say %q", err, path, tc.want)
			}
		})
	}
	// The documented spelling still works.
	path := filepath.Join(t.TempDir(), "ok.toml")
	os.WriteFile(path, []byte("CallerCheck = \"off\"\n[always]\nenabled = true\n"), 0o600)
	if cfg, err := loadConfig(path, "demo"); err != nil || cfg.CallerCheck != "off" || !cfg.Always.Enabled {
		t.Fatalf("loadConfig = %+v, %v", cfg, err)
	}
}
