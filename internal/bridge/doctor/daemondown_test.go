package doctor

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/linux/systemd"
)

// TestDaemonRowSaysWhyItStopped_L4: when the daemon is not running and
// left the reason it stopped (a config typo as it started), the daemon
// row fails with that reason and its fix, and the units row of a failed
// collie.service points to it, instead of "start it", which fails the
// same way again; without a reason it is a skip with how to start it. A
// config file changed since the failure says to start it again.
func TestDaemonRowSaysWhyItStopped_L4(t *testing.T) {
	typo := `the daemon cannot start: /home/alice/.config/collie/config.toml, line 3: unknown setting "push.ntfy.topik"; remove it, or see collie.toml(5) for the settings there are`
	at := time.Now().Add(-time.Minute)
	for _, tt := range []struct {
		name         string
		failure      *systemd.Failure
		configLater  bool
		status       Status
		msg, fix     string
		unitsFixHave string
	}{
		{name: "no_failure", status: Skip, msg: "skipped: the daemon is not running", fix: "systemctl --user start collie.service", unitsFixHave: "systemctl --user restart collie.service; if it fails again"},
		{name: "config_typo", failure: &systemd.Failure{Time: at, Starting: true, Message: typo}, status: Fail,
			msg: `the daemon is not running; its last start failed at ` + at.Local().Format(time.DateTime) + `: /home/alice/.config/collie/config.toml, line 3: unknown setting "push.ntfy.topik"; remove it`,
			fix: "fix what the message says; then: systemctl --user restart collie.service", unitsFixHave: "see the daemon row: fix what the message says"},
		{name: "with_hint", failure: &systemd.Failure{Time: at, Message: "the daemon stopped: the device API cannot listen", Hint: "free port 8780"}, status: Fail,
			msg: "the daemon is not running; it stopped on an error at " + at.Local().Format(time.DateTime) + ": the device API cannot listen",
			fix: "free port 8780; then: systemctl --user restart collie.service"},
		{name: "config_changed_since", failure: &systemd.Failure{Time: at, Starting: true, Message: typo}, configLater: true, status: Fail,
			msg: "config.toml changed since)", fix: "start it again to see whether the change fixed it: systemctl --user restart collie.service"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := healthy(t)
			e.Daemon = fakeDaemon{err: control.ErrNotRunning}
			e.Push = func(context.Context) (control.PushStatus, error) { return control.PushStatus{}, control.ErrNotRunning }
			e.Systemd = func(context.Context) (Systemd, error) {
				return fakeSystemd{"collie.service": {Load: "loaded", Active: "failed", Sub: "failed", FileState: "enabled"}}, nil
			}
			if tt.failure != nil {
				if err := systemd.WriteFailure(systemd.FailureFile(e.Paths.State), *tt.failure); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(e.Paths.Config, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.Paths.ConfigFile(), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			mtime := at.Add(-time.Hour)
			if tt.configLater {
				mtime = at.Add(time.Second)
			}
			os.Chtimes(e.Paths.ConfigFile(), mtime, mtime)
			rows := run(t, e, "units", "daemon", "device-listener", "push", "config-reload")
			var daemon, units, listener Row
			var needDaemon []Row
			for _, r := range rows {
				switch {
				case r.Check == "push" || r.Check == "config-reload":
					needDaemon = append(needDaemon, r)
				case r.Check == "daemon":
					daemon = r
				case r.Subject == "collie.service":
					units = r
				case r.Check == "device-listener":
					listener = r
				}
			}
			// A row that needs the running daemon points to the daemon row
			// when it stopped on an error.
			for _, r := range append(needDaemon, listener) {
				if tt.status == Fail && (r.Status != Skip || !strings.HasPrefix(r.Fix, "see the daemon row: ")) {
					t.Errorf("%s row %+v; want a skip pointing to the daemon row", r.Check, r)
				}
			}
			if len(needDaemon) != 2 {
				t.Errorf("push and config-reload rows: %+v", needDaemon)
			}
			if daemon.Status != tt.status || !strings.Contains(daemon.Message, tt.msg) || !strings.HasPrefix(daemon.Fix, tt.fix) {
				t.Errorf("daemon row %+v; want %s, %q, fix %q", daemon, tt.status, tt.msg, tt.fix)
			}
			if tt.unitsFixHave != "" && !strings.Contains(units.Fix, tt.unitsFixHave) {
				t.Errorf("collie.service row %+v; want its fix to say %q", units, tt.unitsFixHave)
			}
		})
	}
}
