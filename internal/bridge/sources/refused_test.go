package sources

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadRefusesSocketPaths: a socket path that is relative or not clean
// is refused on load (T2), with a sentence that says what to do, while the
// file's other entries load as before and the file is not rewritten; saving
// another change writes the refused entry back as it was.
func TestLoadRefusesSocketPaths(t *testing.T) {
	const fix = "; fix it in {file}, or attach the agent again: collie durable detach bad && collie durable attach bad --socket FULL-PATH"
	tests := []struct {
		name, socket, want string
	}{
		{"T2_dotdot", "/run/user/1000/x/../desk/a.sock", `durable agent bad: the socket path /run/user/1000/x/../desk/a.sock is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`},
		{"T2_relative_dotdot", "x/../desk/a.sock", "durable agent bad: the socket path x/../desk/a.sock is not absolute; give the full path"},
		{"T2_relative", "desk/a.sock", "durable agent bad: the socket path desk/a.sock is not absolute; give the full path"},
		{"T2_dot", "/run/user/1000/./desk/a.sock", "is not in clean form"},
		{"T2_double_slash", "/run/user/1000//desk/a.sock", "is not in clean form"},
		{"T2_trailing_slash", "/run/user/1000/desk/a.sock/", "is not in clean form"},
		{"T2_nul", "/run/user/1000/desk/a.sock\\u0000", "durable agent bad: the socket path has a NUL byte; give the path without it"},
		{"T2_escape", "/run/user/1000/desk/\\u001b[2Ja.sock", `durable agent bad: the socket path "/run/user/1000/desk/\x1b[2Ja.sock" has a control character; give the path without it`},
		{"T2_over_sun_path", "/run/user/1000/desk/" + strings.Repeat("a", 100) + ".sock", "a Unix socket address holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sources.json")
			content := `{"version": 1, "sources": [
  {"name": "good", "socket": "/run/user/1000/desk/good.sock"},
  {"name": "bad", "socket": "` + tt.socket + `"},
  {"name": "cloud", "url": "https://agent.example.com", "token": "` + token + `"}
]}
`
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := Load(file)
			if err != nil {
				t.Fatalf("Load = %v, want the other entries loaded", err)
			}
			if len(f.Sources) != 3 || f.Sources[0].Refused != "" || f.Sources[2].Refused != "" {
				t.Fatalf("Load = %+v, want good and cloud as they are", f.Sources)
			}
			bad := f.Sources[1]
			if !strings.Contains(bad.Refused, tt.want) || !strings.HasSuffix(bad.Refused, strings.ReplaceAll(fix, "{file}", file)) {
				t.Fatalf("Refused = %q\nwant it to hold %q and end with the fix", bad.Refused, tt.want)
			}
			for _, c := range bad.Refused {
				if c < 0x20 || c == 0x7f {
					t.Fatalf("the reason carries control character %U: %q", c, bad.Refused)
				}
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, []byte(content)) {
				t.Fatalf("Load rewrote the file:\n%s", got)
			}

			// Another change keeps the refused entry as it was written.
			if err := Update(file, func(f *File) error { return f.Remove("good") }); err != nil {
				t.Fatalf("Update with a refused entry = %v", err)
			}
			f, err = Load(file)
			if err != nil || len(f.Sources) != 2 || f.Sources[0].Name != "bad" || f.Sources[0].Socket != bad.Socket || f.Sources[0].Refused == "" {
				t.Fatalf("after Update: %+v, %v; want bad kept as it was, still refused", f.Sources, err)
			}
			// Detaching it is the way out.
			if err := Update(file, func(f *File) error { return f.Remove("bad") }); err != nil {
				t.Fatal(err)
			}
			if f, err := Load(file); err != nil || len(f.Sources) != 1 || f.Sources[0].Name != "cloud" {
				t.Fatalf("after detaching bad: %+v, %v", f.Sources, err)
			}
		})
	}
}

// TestAddRefusesSocketPaths: nothing new with a socket path out of form gets
// into the file (T2); Load's leniency is only for what is already there.
func TestAddRefusesSocketPaths(t *testing.T) {
	var f File
	for _, p := range []string{"x/../desk/a.sock", "/run/user/1000/x/../desk/a.sock", "/run/user/1000/desk/a.sock/", "/run//a.sock"} {
		if err := f.Add(Source{Name: "a", Socket: p}); err == nil {
			t.Errorf("Add accepted the socket path %q", p)
		}
		// Even marked refused: Add checks the whole entry.
		if err := f.Add(Source{Name: "a", Socket: p, Refused: "x"}); err == nil {
			t.Errorf("Add accepted the refused socket path %q", p)
		}
	}
	if len(f.Sources) != 0 {
		t.Fatalf("Sources = %+v", f.Sources)
	}
}

// TestLoadNameNotQuoted: a token in the name field of sources.json (32 to
// 64 bytes fit the length rule) is not printed in Load's error (K5).
// FuzzLoad found it; its input is kept in testdata/fuzz/FuzzLoad.
func TestLoadNameNotQuoted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sources.json")
	if err := os.WriteFile(file, []byte(`{"version": 1, "sources": [{"name": "`+token[:40]+`X", "socket": "/s"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file)
	checkErr(t, err, "load sources: "+file+" has a bad entry (source 1: the durable agent name is not allowed; use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit); fix or remove "+file)
}
