package sockpath

import (
	"errors"
	"path"
	"strings"
	"testing"
)

// TestCheckForm is the form every socket path must have before anything
// walks or dials it (T2): the path walked is the path connected.
func TestCheckForm(t *testing.T) {
	long := "/run/user/1000/desk/" + strings.Repeat("a", MaxPathLen-len("/run/user/1000/desk/"))
	tests := []struct {
		name, path, want string // want "" means accepted
	}{
		{"T2_clean_absolute", "/run/user/1000/desk/app.sock", ""},
		{"T2_longest", long, ""},
		{"T2_root", "/", ""}, // the form is fine; the walk says it is no socket
		{"T2_empty", "", "no socket path given; give the full path"},
		{"T2_relative", "desk/app.sock", "the socket path desk/app.sock is not absolute; give the full path"},
		{"T2_dot_relative", "./app.sock", "the socket path ./app.sock is not absolute; give the full path"},
		{"T2_dotdot", "/run/user/1000/x/../desk/a.sock", "the socket path /run/user/1000/x/../desk/a.sock is not in clean form"},
		{"T2_relative_dotdot", "x/../desk/a.sock", "the socket path x/../desk/a.sock is not absolute"},
		{"T2_dot", "/run/user/1000/./desk/a.sock", "is not in clean form"},
		{"T2_double_slash", "/run/user/1000//desk/a.sock", "is not in clean form"},
		{"T2_leading_double_slash", "//run/user/1000/desk/a.sock", "is not in clean form"},
		{"T2_trailing_slash", "/run/user/1000/desk/a.sock/", "is not in clean form"},
		{"T2_trailing_dot", "/run/user/1000/desk/.", "is not in clean form"},
		{"T2_nul", "/run/user/1000/desk/a.sock\x00/../b.sock", "the socket path has a NUL byte; give the path without it"},
		{"T2_newline", "/run/user/1000/desk/a\n.sock", `the socket path "/run/user/1000/desk/a\n.sock" has a control character; give the path without it`},
		{"T2_escape", "/run/user/1000/desk/\x1b[31ma.sock", `"/run/user/1000/desk/\x1b[31ma.sock" has a control character`},
		{"T2_del", "/run/\x7f", "has a control character"},
		{"T2_over_sun_path", long + "b", "bytes, more than the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckForm(tt.path)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckForm(%q) = %v, want nil", tt.path, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Reason, tt.want) {
				t.Fatalf("CheckForm(%q) = %v, want *Error containing %q", tt.path, err, tt.want)
			}
			if strings.ContainsRune(e.Reason, 0) || strings.ContainsRune(e.Reason, '\n') || strings.ContainsRune(e.Reason, 0x1b) {
				t.Errorf("the reason carries a control character: %q", e.Reason)
			}
		})
	}
}

func FuzzCheckForm(f *testing.F) {
	for _, s := range []string{"", "/", "//", "/run/user/1000/desk/app.sock", "a/b", "/tmp/../tmp/./x", "/\x00", "/a/", "/a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := CheckForm(p)
		if err == nil {
			if p == "" || p[0] != '/' || path.Clean(p) != p || len(p) > MaxPathLen || strings.ContainsAny(p, "\x00\n\r\x1b") {
				t.Fatalf("CheckForm(%q) = nil for a path not in form", p)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("CheckForm(%q) returned %T, want *Error", p, err)
		}
		for _, r := range e.Reason {
			if r < 0x20 || r == 0x7f {
				t.Fatalf("CheckForm(%q): the reason carries control character %U", p, r)
			}
		}
	})
}
