package grants

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileGrantsStrict (D7): the grants file is read
// exact-case, with no name twice, no unknown field and valid UTF-8. Before,
// "Scope"/"CommandPrefix" filled the fields and the last of two
// "commandPrefix" won, so a file could widen a grant past what it showed.
func TestFileGrantsStrict(t *testing.T) {
	good := `[{"id":"g1","scope":{"tool":"Bash","commandPrefix":"git status","durationSeconds":3600,"text":"t"},"question":"q","granted":"2025-01-01T00:00:00Z","expires":"2025-01-01T01:00:00Z"}]`
	for _, tc := range []struct{ name, data, want string }{
		{"good", good, ""},
		{"wrong_case", strings.Replace(good, `"commandPrefix"`, `"CommandPrefix"`, 1), `unknown field "CommandPrefix"`},
		{"twice", strings.Replace(good, `"commandPrefix":"git status"`, `"commandPrefix":"git status","commandPrefix":""`, 1), `field "commandPrefix" appears twice`},
		{"unknown", strings.Replace(good, `"question":"q"`, `"question":"q","all":true`, 1), `unknown field "all"`},
		{"invalid_utf8", strings.Replace(good, "git status", "git st\xffatus", 1), "not valid UTF-8"},
		{"trailing", good + "[]", "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "grants.json")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			gs, err := File(path).Load()
			if tc.want == "" {
				if err != nil || len(gs) != 1 || gs[0].Scope.CommandPrefix != "git status" {
					t.Fatalf("Load = %+v, %v", gs, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "remove it to start with none") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
