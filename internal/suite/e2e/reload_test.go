package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// TestSystemdReloadConfig_L2: systemctl --user reload collie re-reads
// config.toml under the real user manager. [push.ntfy] added to a running
// daemon is in use after the reload (collie push test reaches the ntfy
// double); a typo is refused whole, with the line and setting at
// PRIORITY=3 in the journal and in collie doctor, and the daemon keeps the
// settings it ran with; a change to [devices] is named in the journal and
// in doctor as waiting for a restart. (A reload used to re-read only
// sources.json, and push test silently listed what it had at start.)
func TestSystemdReloadConfig_L2(t *testing.T) {
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	um.InstallUnit("collie.service", unit(t, "collie.service", bin))
	ntfy := newNtfy(t)
	cfg := um.Home + "/.config/collie/config.toml"
	write := func(body string) {
		t.Helper()
		if err := um.MkdirAll(filepath.Dir(cfg)); err != nil {
			t.Fatal(err)
		}
		if err := um.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	collie := func(ok bool, args ...string) string {
		t.Helper()
		out, err := um.Command(ctx, bin+"/collie", args...).CombinedOutput()
		if (err == nil) != ok {
			t.Fatalf("collie %s: %v (want ok=%v)\n%s", strings.Join(args, " "), err, ok, out)
		}
		return string(out)
	}
	// reload reloads collie.service and waits for the journal line that
	// says how the reload of config.toml went.
	reloads := 0
	reload := func(want string) systemdtest.JournalEntry {
		t.Helper()
		reloads++
		if out, err := um.Systemctl(ctx, "reload", "collie.service"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		n := 0
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		e, err := um.WaitJournal(wctx, func(e systemdtest.JournalEntry) bool {
			if strings.HasPrefix(e["MESSAGE"], "config.toml reloaded") || strings.HasPrefix(e["MESSAGE"], "config.toml was not reloaded") {
				n++
				return n == reloads && strings.Contains(e["MESSAGE"], want)
			}
			return false
		}, "_SYSTEMD_USER_UNIT=collie.service")
		if err != nil {
			t.Fatalf("reload %d: %v", reloads, err)
		}
		return e
	}
	base := "[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\nwebpush = false\n"
	ntfyCfg := fmt.Sprintf("\n[push.ntfy]\nserver = %q\ntopic = \"collie-reload-topic\"\n", ntfy.srv.URL)
	write(base)
	if out, err := um.Systemctl(ctx, "start", "collie.service"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out := collie(false, "push", "test"); !strings.Contains(out, "no push provider is in use") {
		t.Fatalf("push test before the reload:\n%s", out)
	}

	// [push.ntfy] added: in use after the reload, without a restart.
	write(base + ntfyCfg)
	reload("config.toml reloaded")
	if out := collie(true, "push", "test"); !strings.Contains(out, "ntfy: ok: ntfy at "+ntfy.srv.URL+" accepted it") {
		t.Fatalf("push test after adding [push.ntfy] and reloading:\n%s", out)
	}
	if !slices.Contains(ntfy.titles(), "Collie: test push") {
		t.Fatalf("the ntfy double got %q", ntfy.titles())
	}
	if out := collie(true, "doctor", "--check", "config-reload"); !strings.Contains(out, "the daemon runs with config.toml as it is") {
		t.Fatalf("doctor after a good reload:\n%s", out)
	}

	// A typo: refused whole, the running settings kept, the reason said.
	write(base + strings.Replace(ntfyCfg, "topic", "topik", 1))
	e := reload("config.toml was not reloaded")
	if e["PRIORITY"] != "3" || !strings.Contains(e["MESSAGE"], `unknown setting "push.ntfy.topik"`) || !strings.Contains(e["MESSAGE"], "line 10") || strings.Count(e["MESSAGE"], "topik") != 1 {
		t.Errorf("the refused reload's journal line: PRIORITY=%s %q", e["PRIORITY"], e["MESSAGE"])
	}
	if out := collie(true, "push", "test"); !strings.Contains(out, "ntfy: ok") {
		t.Fatalf("push test after a refused reload (the daemon keeps ntfy):\n%s", out)
	}
	if out := collie(false, "doctor", "--check", "config-reload"); !strings.Contains(out, "the last reload of config.toml was refused") || !strings.Contains(out, `unknown setting "push.ntfy.topik"`) {
		t.Fatalf("doctor after a refused reload:\n%s", out)
	}

	// A change only a restart applies: named, in the journal and doctor.
	write(strings.Replace(base, "listen = \"127.0.0.1:0\"", "listen = \"127.0.0.1:0\"\ntls = \"off\"", 1) + ntfyCfg)
	e = reload("apply only after a restart")
	if !strings.Contains(e["MESSAGE"], "[devices]") || !strings.Contains(e["MESSAGE"], "systemctl --user restart collie") {
		t.Errorf("the reload's journal line: %q", e["MESSAGE"])
	}
	if out := collie(true, "doctor", "--check", "config-reload"); !strings.Contains(out, "config.toml changed [devices] since the daemon started") || !strings.Contains(out, "systemctl --user restart collie") {
		t.Fatalf("doctor after a change that needs a restart:\n%s", out)
	}
	if out, err := um.Systemctl(ctx, "is-active", "collie.service"); strings.TrimSpace(out) != "active" {
		t.Fatalf("collie.service after three reloads: %q %v", out, err)
	}
}
