//go:build linux

package upstream

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/collie-linux/collie/internal/linux/privsock"
)

// TestSocketDialsWhatItWalks: the bridge's client refuses a socket path
// that is not in clean form, with the reason, and never reaches the socket
// the raw string leads to. Before, the walk checked the cleaned path (the
// real agent's, private) and the dial used the raw one, which the kernel
// resolves through the link x to the other socket (T2).
func TestSocketDialsWhatItWalks(t *testing.T) {
	root := openDir(t)
	good := startAgent(t, root, demo) // root/desk/a.sock
	var reached atomic.Int32
	// The other socket, private too, at other/desk/a.sock; root/x is a link
	// to other/sub, so root/x/.. is other.
	other := openDir(t)
	l, err := privsock.Listen(filepath.Join(other, "desk", "a.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { reached.Add(1) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	if err := os.Mkdir(filepath.Join(other, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(other, "sub"), filepath.Join(root, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSocket(good, os.Getuid()).Hello(context.Background()); err != nil {
		t.Fatalf("the clean path: %v", err)
	}
	for _, tt := range []struct{ name, path, want string }{
		{"T2_dotdot_through_link", root + "/x/../desk/a.sock", "is not in clean form"},
		{"T2_trailing_slash", good + "/", "is not in clean form"},
		{"T2_double_slash", strings.Replace(good, "/desk/", "//desk/", 1), "is not in clean form"},
		{"T2_relative", "desk/a.sock", "is not absolute"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewSocket(tt.path, os.Getuid()).Hello(context.Background())
			var u *Unreachable
			if !errors.As(err, &u) || !strings.Contains(u.Reason, tt.want) {
				t.Fatalf("Hello(%q) = %v, want Unreachable containing %q", tt.path, err, tt.want)
			}
		})
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the socket behind the link was reached %d times", n)
	}
}
