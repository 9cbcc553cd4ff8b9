package hook

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentClosedHint: an agent that went away without
// answering points at its service's journal only where a systemd user
// manager runs it from its desk socket; otherwise at wherever it was
// started, never at journalctl.
func TestAgentClosedHint(t *testing.T) {
	withSystemd, err := os.MkdirTemp("", "ah-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(withSystemd)
	if err := os.MkdirAll(filepath.Join(withSystemd, "systemd"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(withSystemd, "systemd", "private"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	without := t.TempDir()
	for _, tt := range []struct {
		name, run, path, want string
	}{
		{"systemd_desk", withSystemd, withSystemd + "/desk/deploy.sock", "see why: journalctl --user -u collie-agent@deploy.service -p err"},
		{"systemd_other_socket", withSystemd, "/srv/agents/deploy.sock", "in its terminal or its log"},
		{"no_user_manager", without, without + "/desk/demo.sock", "in its terminal or its log"},
		{"no_runtime_dir", "", "/run/user/1/desk/demo.sock", "in its terminal or its log"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == "XDG_RUNTIME_DIR" {
					return tt.run
				}
				return ""
			}
			got := Env{Getenv: getenv}.DescribeErr(io.ErrUnexpectedEOF, tt.path)
			if !strings.HasPrefix(got, "the agent closed the connection without answering") || !strings.HasSuffix(got, tt.want) {
				t.Errorf("got %q, want it to end %q", got, tt.want)
			}
			if tt.want != "" && !strings.Contains(tt.want, "journalctl") && strings.Contains(got, "journalctl") {
				t.Errorf("points at journalctl without systemd: %q", got)
			}
		})
	}
}
