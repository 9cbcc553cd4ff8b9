//go:build unix

package sockpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// otherUID owns files in the tests that need another user.
const otherUID = 65534

// tree builds a test layout under root and returns the socket path to check.
type tree func(t *testing.T, root string) string

func TestCheck(t *testing.T) {
	uid := os.Getuid()
	tests := []struct {
		name      string
		build     tree
		uid       int    // 0 means the test's own uid
		reason    string // with {root} for the case's root; "" means private
		noSocket  bool
		needsRoot bool
	}{
		{
			name:  "T2_private_socket",
			build: func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o600) },
		},
		{
			name:  "T2_owner_only_socket_0700",
			build: func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o700) },
		},
		{
			name: "T2_unclean_path_refused_not_cleaned",
			build: func(t *testing.T, r string) string {
				sock(t, dir(t, r, "d", 0o700), "s", 0o600)
				return r + "//d/./s"
			},
			reason: "the socket path {root}//d/./s is not in clean form; write it without \".\" or \"..\" parts and without doubled or trailing slashes, as the agent listens on it",
		},
		{
			name: "T3_symlink_as_socket",
			build: func(t *testing.T, r string) string {
				d := dir(t, r, "d", 0o700)
				link(t, sock(t, d, "real", 0o600), filepath.Join(d, "s"))
				return filepath.Join(d, "s")
			},
			reason: "socket-not-private: {root}/d/s is a symlink",
		},
		{
			name: "T3_symlink_as_socket_folder",
			build: func(t *testing.T, r string) string {
				sock(t, dir(t, r, "d", 0o700), "s", 0o600)
				link(t, filepath.Join(r, "d"), filepath.Join(r, "l"))
				return filepath.Join(r, "l", "s")
			},
			reason: "socket-not-private: {root}/l is a symlink",
		},
		{
			name: "T3_symlink_as_folder_above",
			build: func(t *testing.T, r string) string {
				sock(t, dir(t, dir(t, r, "a", 0o755), "d", 0o700), "s", 0o600)
				link(t, filepath.Join(r, "a"), filepath.Join(r, "l"))
				return filepath.Join(r, "l", "d", "s")
			},
			reason: "socket-not-private: {root}/l is a symlink",
		},
		{
			name: "T3_dangling_symlink_as_socket",
			build: func(t *testing.T, r string) string {
				p := filepath.Join(dir(t, r, "d", 0o700), "s")
				link(t, "/nonexistent", p)
				return p
			},
			reason: "socket-not-private: {root}/d/s is a symlink",
		},
		{
			name:   "T3_socket_folder_mode_0755",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o755), "s", 0o600) },
			reason: "the socket's folder {root}/d has mode 0755, not 0700",
		},
		{
			name:   "T3_socket_folder_mode_0750",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o750), "s", 0o600) },
			reason: "the socket's folder {root}/d has mode 0750, not 0700",
		},
		{
			name:   "T3_socket_folder_setgid_2700",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o2700), "s", 0o600) },
			reason: "the socket's folder {root}/d has mode 2700, not 0700",
		},
		{
			name: "T3_sticky_socket_folder_refused",
			build: func(t *testing.T, r string) string {
				return sock(t, dir(t, r, "tmp", 0o1777), "s", 0o600)
			},
			reason: "the socket's folder {root}/tmp has mode 1777, not 0700",
		},
		{
			name: "T3_socket_folder_owned_by_another_user",
			build: func(t *testing.T, r string) string {
				p := sock(t, dir(t, r, "d", 0o700), "s", 0o600)
				chown(t, filepath.Join(r, "d"), otherUID)
				return p
			},
			reason:    "the socket's folder {root}/d belongs to user 65534, not to {uid}",
			needsRoot: true,
		},
		{
			name:   "T3_socket_folder_not_ours_for_the_checked_uid",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o600) },
			uid:    12345,
			reason: "the socket's folder {root}/d belongs to user {uid}, not to 12345",
		},
		{
			name: "T3_socket_folder_is_a_file",
			build: func(t *testing.T, r string) string {
				file(t, filepath.Join(r, "f"), 0o600)
				return filepath.Join(r, "f", "s")
			},
			reason: "the socket's folder {root}/f is not a directory",
		},
		{
			name: "T3_folder_above_is_a_file",
			build: func(t *testing.T, r string) string {
				file(t, filepath.Join(r, "f"), 0o600)
				return filepath.Join(r, "f", "d", "s")
			},
			reason: "{root}/f is not a directory",
		},
		{
			name: "T3_folder_above_group_writable_0775",
			build: func(t *testing.T, r string) string {
				return sock(t, dir(t, dir(t, r, "a", 0o775), "d", 0o700), "s", 0o600)
			},
			reason: "{root}/a has mode 0775, so group or others can write to it",
		},
		{
			name: "T3_folder_above_others_writable_0757",
			build: func(t *testing.T, r string) string {
				return sock(t, dir(t, dir(t, r, "a", 0o757), "d", 0o700), "s", 0o600)
			},
			reason: "{root}/a has mode 0757, so group or others can write to it",
		},
		{
			name: "T3_folder_two_above_group_writable",
			build: func(t *testing.T, r string) string {
				a := dir(t, r, "a", 0o770)
				return sock(t, dir(t, dir(t, a, "b", 0o755), "d", 0o700), "s", 0o600)
			},
			reason: "{root}/a has mode 0770, so group or others can write to it",
		},
		{
			name: "T3_sticky_folder_above_allowed",
			build: func(t *testing.T, r string) string {
				return sock(t, dir(t, dir(t, r, "tmp", 0o1777), "d", 0o700), "s", 0o600)
			},
		},
		{
			name: "T3_folder_above_owner_not_checked",
			build: func(t *testing.T, r string) string {
				p := sock(t, dir(t, dir(t, r, "a", 0o755), "d", 0o700), "s", 0o600)
				chown(t, filepath.Join(r, "a"), otherUID)
				return p
			},
			needsRoot: true,
		},
		{
			name:   "T3_socket_mode_0666",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o666) },
			reason: "the socket has mode 0666, not 0600",
		},
		{
			name:   "T3_socket_mode_0640",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o640) },
			reason: "the socket has mode 0640, not 0600",
		},
		{
			name:   "T3_socket_mode_0601",
			build:  func(t *testing.T, r string) string { return sock(t, dir(t, r, "d", 0o700), "s", 0o601) },
			reason: "the socket has mode 0601, not 0600",
		},
		{
			name: "T3_socket_owned_by_another_user",
			build: func(t *testing.T, r string) string {
				p := sock(t, dir(t, r, "d", 0o700), "s", 0o600)
				chown(t, p, 12345)
				return p
			},
			reason:    "the socket belongs to user 12345, not to {uid}",
			needsRoot: true,
		},
		{
			name: "T3_regular_file_instead_of_socket",
			build: func(t *testing.T, r string) string {
				p := filepath.Join(dir(t, r, "d", 0o700), "s")
				file(t, p, 0o600)
				return p
			},
			reason: "the path is not a socket",
		},
		{
			name:   "T3_folder_instead_of_socket",
			build:  func(t *testing.T, r string) string { return dir(t, dir(t, r, "d", 0o700), "s", 0o700) },
			reason: "the path is not a socket",
		},
		{
			name:     "T4_nothing_at_path",
			build:    func(t *testing.T, r string) string { return filepath.Join(dir(t, r, "d", 0o700), "s") },
			reason:   "no socket at {root}/d/s",
			noSocket: true,
		},
		{
			name:     "T4_missing_folder_on_the_way",
			build:    func(t *testing.T, r string) string { return filepath.Join(r, "gone", "d", "s") },
			reason:   "no socket at {root}/gone/d/s",
			noSocket: true,
		},
		{
			name:   "T4_relative_path",
			build:  func(*testing.T, string) string { return "desk/app.sock" },
			reason: "the socket path desk/app.sock is not absolute; give the full path",
		},
		{
			name:   "T4_dot_relative_path",
			build:  func(*testing.T, string) string { return "./app.sock" },
			reason: "the socket path ./app.sock is not absolute; give the full path",
		},
		{
			name:   "T4_empty_path",
			build:  func(*testing.T, string) string { return "" },
			reason: "no socket path given; give the full path",
		},
		{
			name:   "T4_root_is_not_a_socket",
			build:  func(*testing.T, string) string { return "/" },
			reason: "the path is not a socket",
		},
	}

	// Socket paths are limited to about 100 bytes, so each case gets a short
	// numbered folder under one temporary folder rather than its own TempDir.
	base := t.TempDir()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsRoot {
				requireRoot(t)
			}

			root := filepath.Join(base, strconv.Itoa(i))
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			path := tt.build(t, root)
			checkAs := uid
			if tt.uid != 0 {
				checkAs = tt.uid
			}

			err := Check(path, checkAs)
			// Identify, the walk before each request on a kept connection,
			// judges by the same table with the same reasons.
			if _, ierr := Identify(path, checkAs); errText(ierr) != errText(err) {
				t.Errorf("Identify(%q) = %v, Check says %v", path, ierr, err)
			}

			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %q, want private (nil)", path, err)
				}
				return
			}
			want := strings.NewReplacer("{root}", root, "{uid}", strconv.Itoa(uid)).Replace(tt.reason)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check(%q) = %v (%T), want *Error %q", path, err, err, want)
			}
			if e.Error() != want || e.Reason != want {
				t.Errorf("Check(%q) reason\n got: %s\nwant: %s", path, e.Error(), want)
			}
			if e.NoSocket != tt.noSocket {
				t.Errorf("NoSocket = %v, want %v", e.NoSocket, tt.noSocket)
			}
			if code := codeOfReason(want); e.Code != code {
				t.Errorf("Code = %q, want %q for %q", e.Code, code, want)
			}
			if e.Part != "" && !strings.HasPrefix(path, e.Part) {
				t.Errorf("Part = %q, not a part of %q", e.Part, path)
			}
			if e.Part != "" && e.Code != CodeNoSocket && !strings.Contains(e.Reason, e.Part) && e.Code != CodeNotSocket && e.Code != CodeSocketMode && e.Code != CodeSocketOwner {
				t.Errorf("Part = %q, which the reason %q does not name", e.Part, e.Reason)
			}
			if tt.noSocket && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("errors.Is(%v, fs.ErrNotExist) = false, want true", err)
			}
		})
	}
}

// codeOfReason is the code a reason's wording implies: the table of
// TestCheck is written in sentences, and each must carry the code that
// says the same to a program.
func codeOfReason(reason string) Code {
	for _, c := range []struct {
		re   string
		code Code
	}{
		{`^no socket path given`, CodeNoPath},
		{`^the socket path .*(not absolute|not in clean form|control character|NUL byte|bytes, more than)`, CodeForm},
		{`is a symlink$`, CodeSymlink},
		{`is not a directory$`, CodeNotDirectory},
		{`so group or others can write to it$`, CodeWritable},
		{`^the socket's folder .* belongs to user`, CodeFolderOwner},
		{`^the socket's folder .* has mode`, CodeFolderMode},
		{`^the path is not a socket$`, CodeNotSocket},
		{`^the socket belongs to user`, CodeSocketOwner},
		{`^the socket has mode`, CodeSocketMode},
		{`^no socket at `, CodeNoSocket},
		{`^nothing is listening at `, CodeNotListening},
		{`^cannot check `, CodeCannotCheck},
		{`^cannot connect to `, CodeCannotConnect},
	} {
		if regexp.MustCompile(c.re).MatchString(reason) {
			return c.code
		}
	}
	return "unknown"
}

// TestCheckPathAbove runs the walk over the real folders above t.TempDir,
// which include the sticky /tmp, and checks the *Error's Path field.
func TestCheckPathAbove(t *testing.T) {
	d := dir(t, t.TempDir(), "desk", 0o700)
	p := sock(t, d, "app.sock", 0o600)
	if err := Check(p, os.Getuid()); err != nil {
		t.Fatalf("T7 layout %s: %v", p, err)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		t.Fatal(err)
	}
	var e *Error
	if err := Check(p, os.Getuid()); !errors.As(err, &e) || e.Path != p {
		t.Fatalf("Check(%q) = %#v, want *Error with Path %q", p, err, p)
	}
	// T2: a trailing slash is refused as it is, not cleaned away.
	if err := Check(p+"/", os.Getuid()); !errors.As(err, &e) || e.Path != p+"/" || !strings.Contains(e.Reason, "not in clean form") {
		t.Fatalf("Check(%q) = %#v, want *Error about the form with Path %q", p+"/", err, p+"/")
	}
}

func BenchmarkCheck(b *testing.B) {
	d := filepath.Join(b.TempDir(), "desk")
	if err := os.Mkdir(d, 0o700); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(d, "app.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(p, 0o600); err != nil {
		b.Fatal(err)
	}
	uid := os.Getuid()
	if err := Check(p, uid); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Check(p, uid); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWalkDial is the bridge's cost per connection: the walk and the
// connection to the socket it checked (Dial), then closing it.
func BenchmarkWalkDial(b *testing.B) {
	d := filepath.Join(b.TempDir(), "desk")
	if err := os.Mkdir(d, 0o700); err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(d, "app.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if err := os.Chmod(p, 0o600); err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	uid := os.Getuid()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, p, uid)
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "/", "//", "/run/user/1000/desk/app.sock", "a/b", "/tmp/../tmp/./x", "/\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		err := Check(path, os.Getuid())
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("Check(%q) returned %T, want *Error", path, err)
		}
	})
}

func requireRoot(t *testing.T) {
	t.Helper()
	testenv.RequireRoot(t, "chown files to another user")
}

// dir makes the folder name in parent with exactly mode, whatever the umask.
func dir(t *testing.T, parent, name string, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(parent, name)
	if err := os.Mkdir(p, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, p, mode)
	return p
}

// sock listens on a real Unix socket at parent/name for the rest of the test.
func sock(t *testing.T, parent, name string, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(parent, name)
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	chmod(t, p, mode)
	return p
}

func file(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, nil, mode); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Fatal(err)
	}
}

// chmod sets mode including the setuid, setgid and sticky bits.
func chmod(t *testing.T, p string, mode fs.FileMode) {
	t.Helper()
	m := mode.Perm()
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	var e *Error
	if errors.As(err, &e) {
		return fmt.Sprintf("%s nosocket=%v", e.Reason, e.NoSocket)
	}
	return err.Error()
}
