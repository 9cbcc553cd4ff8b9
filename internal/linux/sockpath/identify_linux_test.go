package sockpath

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestIdentify: the ID a walk ends at is the ID of the socket DialID
// connected to, stays while nothing changes, and changes when another
// socket is renamed over the path or the socket is made anew there (T2,
// the kept connection's check).
func TestIdentify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "desk")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	listen := func(p string) net.Listener {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o600)
		t.Cleanup(func() { l.Close() })
		return l
	}
	path := filepath.Join(dir, "a.sock")
	l := listen(path)
	c, dialed, err := DialID(context.Background(), path, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	id, err := Identify(path, os.Getuid())
	if err != nil || id != dialed {
		t.Fatalf("Identify = %+v, %v; DialID connected to %+v", id, err, dialed)
	}
	steps := []struct {
		name string
		do   func()
	}{
		{"T2_other_socket_renamed_over", func() {
			listen(path + ".new")
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"T2_socket_made_anew", func() {
			l.Close()
			os.Remove(path)
			l = listen(path)
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.do()
			next, err := Identify(path, os.Getuid())
			if err != nil {
				t.Fatal(err)
			}
			if next == id {
				t.Fatalf("the ID stayed %+v after the socket changed", id)
			}
			id = next
		})
	}
}
