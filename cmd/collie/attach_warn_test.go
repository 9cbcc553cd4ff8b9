package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/sources"
)

// TestAttachSaysWhatIsNotThereYet_L4: attach records a source whose socket
// or CA file is not there yet (an agent may start later), and says what
// was not found and how to start it; a live socket gets no warning.
func TestAttachSaysWhatIsNotThereYet_L4(t *testing.T) {
	dir, err := os.MkdirTemp("", "cw-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	paths := config.Paths{Config: dir, State: dir, Runtime: dir}
	live, err := net.Listen("unix", filepath.Join(dir, "live.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	stale, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	os.WriteFile(filepath.Join(dir, "file"), nil, 0o600)
	os.MkdirAll(paths.Desk(), 0o700)

	for _, tt := range []struct {
		name string
		src  sources.Source
		want string // "" for no warning
	}{
		{"live_socket", sources.Source{Name: "a", Socket: filepath.Join(dir, "live.sock")}, ""},
		{"missing_socket", sources.Source{Name: "a", Socket: filepath.Join(dir, "a.sock")}, "nothing is at " + dir + "/a.sock yet: the bridge reads a once an agent listens there; start the agent that listens there; for collie-agent: collie-agent --name a --socket " + dir + "/a.sock"},
		{"missing_folder", sources.Source{Name: "a", Socket: "/nonexistent/a.sock"}, "nothing is at /nonexistent/a.sock yet, and its folder /nonexistent does not exist"},
		{"desk_socket", sources.Source{Name: "demo", Socket: filepath.Join(paths.Desk(), "demo.sock")}, "start it with: systemctl --user enable --now collie-agent@demo.socket"},
		{"stale_socket", sources.Source{Name: "a", Socket: filepath.Join(dir, "stale.sock")}, "nothing listens on " + dir + "/stale.sock yet"},
		{"not_a_socket", sources.Source{Name: "a", Socket: filepath.Join(dir, "file")}, dir + "/file is not a socket"},
		{"missing_ca", sources.Source{Name: "far", URL: "https://agent.example.com", CAFile: "/nonexistent/ca.pem"}, "there is no file at /nonexistent/ca.pem (--ca-file) yet"},
		{"ca_there", sources.Source{Name: "far", URL: "https://agent.example.com", CAFile: filepath.Join(dir, "file")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(notThereYet(tt.src, paths), "\n")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("warnings %q; want %q", got, tt.want)
			}
		})
	}
}
