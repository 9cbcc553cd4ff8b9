package loginservice

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzOpen fuzzes the store file's parser through Open (R5): it never
// panics; a refusal names the file and says to move it away; and whatever
// it accepts it writes back, and that reads back equal and writes the same
// bytes again.
func FuzzOpen(f *testing.F) {
	for _, s := range []string{
		`{"schema":"collie-agent-sessions.v1","grants":[],"chains":[]}`,
		`{"schema":"collie-agent-sessions.v1","grants":null,"chains":null}`,
		`{"schema":"collie-agent-sessions.v1"}`,
		`{"schema":"collie-agent-sessions.v1","grants":[],"chains":[],"schema":"x"}`,
		`[]`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "agent-sessions.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Path: path})
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "move it away") {
				t.Fatalf("refusal %q does not name the file and the fix", msg)
			}
			return
		}
		out, err := encode(s.st)
		if err != nil {
			t.Fatalf("accepted, but cannot write it back: %v", err)
		}
		again := filepath.Join(dir, "again.json")
		if err := os.WriteFile(again, out, 0o600); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(Options{Path: again})
		if err != nil {
			t.Fatalf("what it wrote back does not read: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(s.st, s2.st) {
			t.Fatalf("read back differs:\n%s", out)
		}
		out2, err := encode(s2.st)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("written twice differs (%v):\n%s\n%s", err, out, out2)
		}
		// Everything it accepted can be listed and looked up without a panic.
		s.List()
		s.Authenticate("collie_a_" + strings.Repeat("A", 43))
	})
}
