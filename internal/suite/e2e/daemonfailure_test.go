package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// TestSystemdConfigTypoSaysWhy_L4: a typo in config.toml under the real
// user manager, sandbox included. collie.service fails to start, and
// `collie show` and `collie doctor --check config --check daemon --check
// units` then say the real reason (the file, line 2 and the setting) and
// the fix, rather than "start it with systemctl --user start collie",
// which fails the same way again; both checks run. Once the file is fixed
// and the service restarted, show works and the reason is forgotten.
func TestSystemdConfigTypoSaysWhy_L4(t *testing.T) {
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"collie-agent@.socket", "collie-agent@.service", "collie.service", "collie.service.d/sandbox.conf"} {
		um.InstallUnit(name, unit(t, name, bin))
	}
	cfg := um.Home + "/.config/collie/config.toml"
	if err := um.MkdirAll(filepath.Dir(cfg)); err != nil {
		t.Fatal(err)
	}
	if err := um.WriteFile(cfg, []byte("[push.ntfy]\ntopik = \"collie\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := um.Systemctl(ctx, "start", "collie.service"); err == nil {
		t.Fatalf("collie.service started with a typo in config.toml:\n%s", out)
	}
	typo := cfg + `, line 2: unknown setting "push.ntfy.topik"`

	out, err := um.Run(ctx, bin+"/collie", "show")
	if err == nil {
		t.Fatalf("collie show passed with the daemon down:\n%s", out)
	}
	out = err.Error() // its standard error
	for _, want := range []string{
		"collie: error: the daemon is not running; its last start failed at ",
		typo,
		"collie: hint: fix what the message says; then: systemctl --user restart collie.service",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("collie show does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "systemctl --user start collie") {
		t.Errorf("collie show says to start the daemon, which fails the same way:\n%s", out)
	}
	t.Logf("collie show:\n%s", out)

	// Restart=on-failure brings it back until the start limit; doctor
	// reads the same reason whether it is failed or restarting.
	report, err := um.Run(ctx, bin+"/collie", "doctor", "--check", "config", "--check", "daemon", "--check", "units")
	if err == nil {
		t.Errorf("collie doctor passed with the daemon down:\n%s", report)
	}
	for _, want := range []string{
		"✗ fail  config ",
		"✗ fail  daemon ",
		"the daemon is not running; its last start failed at ",
		typo,
		"fix: fix what the message says; then: systemctl --user restart collie.service",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("collie doctor does not say %q:\n%s", want, report)
		}
	}
	if !strings.Contains(report, " units ") {
		t.Errorf("collie doctor ran one of the checks given:\n%s", report)
	}
	t.Logf("collie doctor:\n%s", report)

	if err := um.WriteFile(cfg, []byte("[devices]\nlisten = \"127.0.0.1:0\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	um.Systemctl(ctx, "reset-failed", "collie.service")
	if out, err := um.Systemctl(ctx, "restart", "collie.service"); err != nil {
		t.Fatalf("collie.service does not start with the file fixed: %v\n%s", err, out)
	}
	if out, err := um.Run(ctx, bin+"/collie", "show"); err != nil {
		t.Fatalf("collie show with the daemon running: %v\n%s", err, out)
	}
	failure := um.Path(um.Home + "/.local/state/collie/last-failure.json")
	waitFor(t, 10*time.Second, "the daemon to forget why it stopped", func() bool {
		_, err := os.Stat(failure)
		return os.IsNotExist(err)
	})
}
