package durable

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The activated cases run in a child process that gets the socket as fd 3,
// the way systemd passes it, and reports what Listen said.
func TestMain(m *testing.M) {
	if os.Getenv("DURABLE_TEST_CHILD") == "1" {
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		l, activated, err := Listen("/nonexistent/unused.sock")
		switch {
		case err != nil:
			fmt.Printf("error: %v activated=%v\n", err, activated)
		default:
			fmt.Printf("ok: %s activated=%v listen_fds=%q\n", l.Addr(), activated, os.Getenv("LISTEN_FDS"))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestListenActivated(t *testing.T) {
	tests := []struct {
		name      string
		dirMode   os.FileMode
		sockMode  os.FileMode
		wantStart string
		want      string
	}{
		{"T5_activated_good", 0o700, 0o600, "ok:", `activated=true listen_fds=""`},
		{"T5_activated_socket_0666", 0o700, 0o666, "error:", "the socket has mode 0666, not 0600"},
		{"T5_activated_folder_0755", 0o755, 0o600, "error:", "has mode 0755, not 0700"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "desk")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "a.sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			os.Chmod(path, tt.sockMode)
			os.Chmod(dir, tt.dirMode)
			f, err := l.(*net.UnixListener).File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "DURABLE_TEST_CHILD=1", "LISTEN_FDS=1")
			cmd.ExtraFiles = []*os.File{f}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			got := string(out)
			if !strings.HasPrefix(got, tt.wantStart) || !strings.Contains(got, tt.want) {
				t.Fatalf("child said %q, want %s … %q", got, tt.wantStart, tt.want)
			}
		})
	}
}
