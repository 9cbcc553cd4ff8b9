//go:build unix

package privsock

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/linux/sockpath"
)

// TestListenT2Form: an agent's own socket path must have the form the
// bridge accepts; one that does not is refused before anything is made,
// never cleaned into another path than the bridge would walk.
func TestListenT2Form(t *testing.T) {
	root, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	tests := []struct{ name, path, want string }{
		{"T2_relative", "desk/a.sock", "the socket path desk/a.sock is not absolute; give the full path"},
		{"T2_dotdot", root + "/x/../desk/a.sock", "is not in clean form"},
		{"T2_dot", root + "/./desk/a.sock", "is not in clean form"},
		{"T2_double_slash", root + "//desk/a.sock", "is not in clean form"},
		{"T2_trailing_slash", root + "/desk/a.sock/", "is not in clean form"},
		{"T2_nul", root + "/desk/a\x00.sock", "has a NUL byte"},
		{"T2_over_sun_path", root + "/desk/" + strings.Repeat("a", 120), "a Unix socket address holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Listen(tt.path)
			if err == nil {
				l.Close()
				t.Fatalf("Listen(%q) listened, want refused", tt.path)
			}
			var se *sockpath.Error
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Listen(%q) = %v, want %q", tt.path, err, tt.want)
			}
			if _, err := os.Lstat(filepath.Join(root, "desk")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a refused path made the folder %s/desk", root)
			}
		})
	}
	// T5: the clean form listens, and the bridge's Dial reaches it.
	p := filepath.Join(root, "desk", "a.sock")
	l, err := Listen(p)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := sockpath.Dial(context.Background(), p, os.Getuid())
	if err != nil {
		t.Fatalf("Dial(%s) = %v", p, err)
	}
	c.Close()
}
