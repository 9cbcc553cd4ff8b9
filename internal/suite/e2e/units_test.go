package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestUnitsVerify_L1_L2: every unit in systemd/, with its drop-ins,
// passes systemd-analyze --user verify, with the binaries' paths pointed at a
// fresh build (the package installs them in /usr/bin). Man pages are not
// looked up here: the install test verifies the installed units with
// theirs.
func TestUnitsVerify_L1_L2(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testenv.Unavailable(t, "systemd-analyze is not installed (Debian package systemd)")
	}
	bin := build(t)
	dir := t.TempDir()
	names, err := filepath.Glob("../../../systemd/*.*")
	if err != nil || len(names) == 0 {
		t.Fatalf("no units in systemd/: %v", err)
	}
	var units []string
	for _, n := range names {
		if fi, err := os.Stat(n); err != nil || fi.IsDir() {
			continue // UNIT.d: its drop-ins are checked with UNIT
		}
		name := filepath.Base(n)
		content := unit(t, name, bin)
		// A drop-in's settings apply after the unit's, as if appended.
		dropins, _ := filepath.Glob(n + ".d/*.conf")
		for _, d := range dropins {
			content += "\n" + unit(t, name+".d/"+filepath.Base(d), bin)
		}
		units = append(units, filepath.Join(dir, name))
		if err := os.WriteFile(units[len(units)-1], []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(analyze, append([]string{"--user", "--man=no", "verify"}, units...)...)
	// A user manager's settings need a runtime folder.
	run := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run, "XDG_CONFIG_HOME="+filepath.Join(run, "config"))
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze --user verify %s: %v\n%s", strings.Join(names, " "), err, out)
	}
}
