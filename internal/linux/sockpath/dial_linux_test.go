package sockpath

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDialConnectsToWhatWasWalked is the root of T2: a path whose walk
// passes once cleaned as text, but whose kernel resolution leads elsewhere
// (x is a link, so x/.. is not the folder that holds x), is refused and
// never dialled. The old code walked the cleaned path and dialled the raw
// one, reaching the socket behind the link.
func TestDialConnectsToWhatWasWalked(t *testing.T) {
	r := shortDir(t)
	sock(t, dir(t, r, "d", 0o700), "s", 0o600) // the private socket the walk would see
	evil := dir(t, r, "e", 0o755)
	el := listen(t, sock(t, dir(t, evil, "d", 0o700), "s", 0o600))
	dir(t, evil, "sub", 0o755)
	link(t, filepath.Join(evil, "sub"), filepath.Join(r, "x"))
	raw := r + "/x/../d/s" // cleaned: r/d/s; resolved: r/e/d/s

	for _, tt := range []struct{ name, path, want string }{
		{"T2_dotdot_through_link", raw, "is not in clean form"},
		{"T2_relative", "x/../d/s", "is not absolute"},
		{"T2_trailing_slash", r + "/d/s/", "is not in clean form"},
		{"T2_double_slash", r + "/d//s", "is not in clean form"},
		{"T2_dot", r + "/./d/s", "is not in clean form"},
		{"T2_nul", r + "/d/s\x00", "has a NUL byte"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.path, os.Getuid())
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%q) connected (to %s), want refused", tt.path, c.RemoteAddr())
			}
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Reason, tt.want) || e.NoSocket {
				t.Fatalf("Dial(%q) = %v, want a form *Error containing %q", tt.path, err, tt.want)
			}
		})
	}
	el.mustBeUntouched(t)
}

// TestDialSwapBetweenWalkAndConnect swaps a part of the path while the walk
// runs (the hook runs right after a part passed): a part already walked is
// held open, so the connection still reaches the socket that was checked;
// a part not yet walked is seen as the link it now is and refused. With a
// walk by name followed by connect(2) by name, every case here reached the
// other socket.
func TestDialSwapBetweenWalkAndConnect(t *testing.T) {
	tests := []struct {
		name   string
		at     string // the part after whose check the swap runs, under the case's root
		swap   string // the part replaced by a link to the same part under e/
		reason string // "" means connected to the socket that was checked
	}{
		{name: "T2_folder_above_swapped_after_connect_check", at: "a/d/s", swap: "a"},
		{name: "T2_socket_folder_swapped_after_connect_check", at: "a/d/s", swap: "a/d"},
		{name: "T2_socket_swapped_after_its_check", at: "a/d/s", swap: "a/d/s"},
		{name: "T2_folder_above_swapped_after_its_check", at: "a", swap: "a"},
		{name: "T3_socket_folder_swapped_before_its_check", at: "a", swap: "a/d", reason: "socket-not-private: {root}/a/d is a symlink"},
		{name: "T3_socket_swapped_before_its_check", at: "a/d", swap: "a/d/s", reason: "socket-not-private: {root}/a/d/s is a symlink"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := shortDir(t)
			good := listen(t, sock(t, dir(t, dir(t, r, "a", 0o755), "d", 0o700), "s", 0o600))
			// The other side: the same layout under e/, private too, so
			// only holding what was walked tells the two apart.
			bad := listen(t, sock(t, dir(t, dir(t, r, "e", 0o755), "d", 0o700), "s", 0o600))
			at := filepath.Join(r, tt.at)
			swapped := false
			hook := func(part string) {
				if part != at || swapped {
					return
				}
				swapped = true
				p := filepath.Join(r, tt.swap)
				if err := os.Rename(p, p+".old"); err != nil {
					t.Fatal(err)
				}
				link(t, filepath.Join(r, "e", strings.TrimPrefix(tt.swap, "a")), p)
			}

			c, _, err := dial(context.Background(), filepath.Join(r, "a/d/s"), os.Getuid(), hook)

			if !swapped {
				t.Fatalf("the walk never reached %s", at)
			}
			if tt.reason != "" {
				want := strings.ReplaceAll(tt.reason, "{root}", r)
				var e *Error
				if !errors.As(err, &e) || e.Reason != want {
					t.Fatalf("dial = %v, want %q", err, want)
				}
				bad.mustBeUntouched(t)
				return
			}
			if err != nil {
				t.Fatalf("dial = %v, want connected to the socket that was checked", err)
			}
			defer c.Close()
			// The peer's address is where its listener bound.
			if got := c.RemoteAddr().String(); got != good.path {
				t.Fatalf("connected to %s, want %s (the socket the walk checked)", got, good.path)
			}
			good.mustHave(t, 1)
			bad.mustBeUntouched(t)
		})
	}
}

// TestDialT4 covers what Dial says when the agent is not there.
func TestDialT4(t *testing.T) {
	r := shortDir(t)
	d := dir(t, r, "d", 0o700)
	p := filepath.Join(d, "s")
	if _, err := Dial(context.Background(), p, os.Getuid()); !isNoSocket(err, "no socket at "+p) {
		t.Fatalf("Dial with nothing there = %v", err)
	}
	// A socket file nobody listens on any more.
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	chmod(t, p, 0o600)
	if _, err := Dial(context.Background(), p, os.Getuid()); !isNoSocket(err, "nothing is listening at "+p+"; start the agent (or its .socket unit)") {
		t.Fatalf("Dial with nothing listening = %v", err)
	}
	if err := Check(p, os.Getuid()); err != nil {
		t.Fatalf("Check of the left socket = %v, want private", err)
	}
}

func isNoSocket(err error, reason string) bool {
	var e *Error
	return errors.As(err, &e) && e.NoSocket && e.Reason == reason && e.Connect == strings.HasPrefix(reason, "nothing is listening")
}

// shortDir is a fresh folder with a short path: sun_path holds 107 bytes.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

type listener struct{ path string }

// listen accepts on the socket already made at p by sock and records
// whether anything connected.
func listen(t *testing.T, p string) *listener {
	t.Helper()
	c, err := net.Dial("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	return &listener{path: p}
}

// mustBeUntouched checks that no connection of the test reached the socket.
func (l *listener) mustBeUntouched(t *testing.T) { l.mustHave(t, 0) }

// mustHave checks that n connections of the test reached the socket: its
// backlog holds them and the one of listen's own probe.
func (l *listener) mustHave(t *testing.T, n int) {
	t.Helper()
	if got := backlog(t, l.path) - 1; got != n {
		t.Fatalf("%d connections reached %s, want %d", got, l.path, n)
	}
}

// backlog counts the connections waiting on the listening socket at p, from
// /proc/net/unix (the listener's queue is not reachable from the *net.UnixListener
// without accepting).
func backlog(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode Path: a connection
		// waiting to be accepted shows the listener's path with state 03
		// (connected) and no listening flag.
		if len(f) == 8 && f[7] == p && f[3] != "00010000" {
			n++
		}
	}
	return n
}
