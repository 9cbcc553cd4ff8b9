package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadExactCase: go-toml matches keys to fields in any
// case, so "Listen" used to set devices.listen; TOML keys are
// case-sensitive, and so is Collie now. A key or table given twice is
// refused (TOML forbids it).
func TestLoadExactCase(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"wrong_case_key", "[devices]\nListen = \"0.0.0.0:8780\"\n",
			`line 2 column 1: unknown setting "devices.Listen"; setting names are case-sensitive: write "listen"; see collie.toml(5)`},
		{"wrong_case_table", "[DEVICES]\nlisten = \"0.0.0.0:8780\"\n", `line 1 column 2: unknown setting "DEVICES"`},
		{"wrong_case_dotted", "devices.TLS = \"off\"\n", `unknown setting "devices.TLS"; setting names are case-sensitive: write "tls"`},
		{"wrong_case_inline", "devices = { tls_Cert = \"/c\" }\n", `write "tls_cert"`},
		{"key_twice", "[devices]\nlisten = \"127.0.0.1:1\"\nlisten = \"0.0.0.0:1\"\n", "line 3 column 1"},
		{"table_twice", "[devices]\nlisten = \"127.0.0.1:1\"\n[devices]\ntls = \"off\"\n", "line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, exists, err := Load(path)
			if !exists || err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path+", line ") {
				t.Fatalf("err = %v, want it to name the file and line and say %q", err, tc.want)
			}
		})
	}
}
