package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// build compiles collie, collie-agent and collie's hook program (as make
// build does: without cgo) where the test user can run them.
func build(t *testing.T) string {
	t.Helper()
	bin := systemdtest.BinDir(t)
	for _, args := range [][]string{{"./cmd/collie", "./cmd/collie-agent"}, {"./cmd/collie-hook"}} {
		cmd := exec.Command("go", append([]string{"build", "-o", bin}, args...)...)
		cmd.Dir = "../../.."
		if args[0] == "./cmd/collie-hook" {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	return bin
}

// unit reads a unit from the repository's systemd/ folder with the
// binaries' paths pointed at bin.
func unit(t *testing.T, name, bin string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../../systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "/usr/bin/", bin+"/")
}

// TestSystemdEndToEnd is the whole path under the real user manager:
// the agent socket-activated from its template unit (L1), the bridge as a
// Type=notify user service logging to journald (L2), the demo question in
// `collie show`, and a desk folder turned 0755 refused with the exact T3
// reason within one poll (T2, T4).
func TestSystemdEndToEnd(t *testing.T) {
	// Type=notify: start returns once the daemon said READY=1.
	r := startBridge(t, 2*time.Minute, bridgeSetup{units: slices.Concat(agentUnits, []string{"collie.service.d/sandbox.conf"}), demo: true, bridge: true})
	um, bin, ctx, must := r.um, r.bin, r.ctx, r.must
	desk := um.RuntimeDir + "/desk"
	sock := desk + "/demo.sock"

	// The sandbox drop-in applies (collie.service.d/sandbox.conf).
	if ps := must(um.Systemctl(ctx, "show", "-p", "ProtectSystem", "--value", "collie.service")); strings.TrimSpace(ps) != "strict" {
		t.Errorf("collie.service has ProtectSystem=%q; the sandbox drop-in was not applied", strings.TrimSpace(ps))
	}

	// The demo question reaches the bridge, cleaned, through socket activation.
	var view []view.Agent
	waitFor(t, loadGuard, "the demo question in collie show --json", func() bool {
		out, err := um.Run(ctx, bin+"/collie", "show", "--json")
		if err != nil || json.Unmarshal([]byte(out), &view) != nil || len(view) != 1 || view[0].Snapshot == nil {
			return false
		}
		qs := view[0].Snapshot.Spaces[0].Tabs[0].Conversations[0].Questions
		return len(qs) == 1 && qs[0].Title == "Deploy the demo to staging?" && qs[0].Kind == "yes-no"
	})

	// The agent was started by socket activation with one socket.
	started, err := um.WaitJournal(ctx, func(e systemdtest.JournalEntry) bool {
		return strings.HasPrefix(e["MESSAGE"], "agent demo: collie-agent serving (")
	}, "_SYSTEMD_USER_UNIT=collie-agent@demo.service")
	if err != nil {
		t.Fatal(err)
	}
	if started["LISTEN_FDS"] != "1" || started["ACTIVATED"] != "true" || started["SOCKET"] != sock {
		t.Errorf("L1: the agent's start entry = %v, want LISTEN_FDS=1 ACTIVATED=true SOCKET=%s", started, sock)
	}

	// The bridge logs native journal entries with priorities and fields (L2).
	e, err := um.WaitJournal(ctx, func(e systemdtest.JournalEntry) bool {
		return strings.HasPrefix(e["MESSAGE"], "collie daemon started (")
	}, "_SYSTEMD_USER_UNIT=collie.service")
	if err != nil {
		t.Fatal(err)
	}
	if e["PRIORITY"] != "6" || e["SYSLOG_IDENTIFIER"] != "collie" {
		t.Errorf("L2: start entry = %v, want PRIORITY=6 SYSLOG_IDENTIFIER=collie", e)
	}
	status := must(um.Systemctl(ctx, "show", "-p", "StatusText", "--value", "collie.service"))
	if !strings.Contains(status, "1 of 1 durable agents reachable") {
		t.Errorf("sd_notify STATUS = %q", status)
	}

	// T3/T4: the desk folder opened up is refused at the next poll.
	must(um.RunRoot(ctx, "chmod", "0755", desk))
	want := fmt.Sprintf("unreachable: the socket's folder %s has mode 0755, not 0700", desk)
	polled := time.Now()
	waitFor(t, 15*time.Second, "the T3 reason in collie durable list", func() bool {
		out, _ := um.Run(ctx, bin+"/collie", "durable", "list")
		return strings.Contains(out, want)
	})
	t.Logf("refused %.1fs after the chmod (one idle poll is 10 s)", time.Since(polled).Seconds())
	w, err := um.WaitJournal(ctx, func(e systemdtest.JournalEntry) bool {
		return strings.HasPrefix(e["MESSAGE"], "agent demo: durable agent is unreachable: ")
	}, "_SYSTEMD_USER_UNIT=collie.service")
	if err != nil {
		t.Fatal(err)
	}
	if w["PRIORITY"] != "4" || w["AGENT"] != "demo" || !strings.Contains(w["REASON"], "has mode 0755, not 0700") || !strings.Contains(w["MESSAGE"], ": "+w["REASON"]) {
		t.Errorf("L2: warning entry = %v, want PRIORITY=4 AGENT=demo and the reason, in MESSAGE too", w)
	}
	status = must(um.Systemctl(ctx, "show", "-p", "StatusText", "--value", "collie.service"))
	if !strings.Contains(status, "0 of 1 durable agents reachable") {
		t.Errorf("sd_notify STATUS after the refusal = %q", status)
	}
	if out := must(um.Systemctl(ctx, "is-active", "collie.service")); strings.TrimSpace(out) != "active" {
		t.Errorf("the bridge is %q after refusing an agent; it must keep running", out)
	}
}

// loadGuard bounds a wait for something that is coming (a question on the
// device API, a line in the journal): no budget, only a guard against a
// hang, long enough that a loaded machine never reaches it while the thing
// is still on its way. A wait that holds the product to a time (a walk of
// the socket path within its 10 s) names its own limit.
const loadGuard = time.Minute

// waitFor polls ok until it holds, failing t after limit.
func waitFor(t *testing.T, limit time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		<-tick.C
	}
}

// TestSystemdFatalStart_L2: a typo in config.toml makes
// collie.service fail, and `journalctl --user -u collie -p err`, where the
// README and doctor send the user, shows why in MESSAGE at PRIORITY=3;
// likewise a typo in an agent's NAME.toml and collie-agent@NAME.service,
// with the agent's name in the text.
func TestSystemdFatalStart_L2(t *testing.T) {
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, name := range []string{"collie-agent@.socket", "collie-agent@.service", "collie.service"} {
		um.InstallUnit(name, unit(t, name, bin))
	}
	cfgDir := um.Home + "/.config"
	for _, f := range []struct{ path, body string }{
		{cfgDir + "/collie/config.toml", "[devices]\nlisten = \"127.0.0.1:0\"\nlisten_addr = \"x\"\n"},
		{cfgDir + "/collie-agent/broken.toml", "title = \"Deploys\"\ntitel = \"typo\"\n"},
	} {
		if err := um.MkdirAll(filepath.Dir(f.path)); err != nil {
			t.Fatal(err)
		}
		if err := um.WriteFile(f.path, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := um.Systemctl(ctx, "start", "collie.service"); err == nil {
		t.Fatalf("collie.service started with a broken config.toml:\n%s", out)
	}
	if out, err := um.Systemctl(ctx, "enable", "--now", "collie-agent@broken.socket"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Type=simple: start returns before the agent reads its config.
	um.Systemctl(ctx, "start", "collie-agent@broken.service")

	for _, tt := range []struct {
		unit, want string
	}{
		{"collie.service", "the daemon cannot start: " + cfgDir + "/collie/config.toml"},
		{"collie-agent@broken.service", "agent broken: cannot start: " + cfgDir + "/collie-agent/broken.toml, line 2"},
	} {
		// The service restarts on failure, so the line comes again; one is
		// enough (see systemdtest's known limits on a process that exits).
		var got string
		waitFor(t, loadGuard, "the reason in journalctl --user -u "+tt.unit+" -p err", func() bool {
			out, _ := um.Run(ctx, "journalctl", "--user", "-u", tt.unit, "-p", "err", "-o", "cat", "--no-pager")
			got = out
			return strings.Contains(out, tt.want)
		})
		if !strings.Contains(got, "line") {
			t.Errorf("%s: the reason does not name the line:\n%s", tt.unit, got)
		}
		t.Logf("journalctl --user -u %s -p err:\n%s", tt.unit, got)
	}

	// collie doctor names the file, line and setting from
	// the agent's own check, tells the failed service from a disabled
	// socket, and points at the service's journal, not the socket's.
	if out, err := um.Run(ctx, bin+"/collie", "durable", "attach", "broken", "--socket", um.RuntimeDir+"/desk/broken.sock"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	waitFor(t, loadGuard, "collie-agent@broken.service failed", func() bool {
		out, _ := um.Systemctl(ctx, "is-failed", "collie-agent@broken.service")
		return strings.TrimSpace(out) == "failed"
	})
	report, err := um.Run(ctx, bin+"/collie", "doctor")
	if err == nil {
		t.Errorf("collie doctor passed with a broken agent:\n%s", report)
	}
	for _, want := range []string{
		`✗ fail  agent-config broken `,
		`collie-agent@broken cannot start: ` + cfgDir + `/collie-agent/broken.toml, line 2: unknown setting "titel"`,
		`collie-agent@broken.service failed`,
		`journalctl --user -u collie-agent@broken.service -p err`,
	} {
		if !strings.Contains(report, want) {
			t.Errorf("collie doctor does not say %q:\n%s", want, report)
		}
	}
	for _, bad := range []string{"enable --now collie-agent@broken.socket", "-u collie-agent@broken.socket", "connection reset by peer"} {
		if strings.Contains(report, bad) {
			t.Errorf("collie doctor says %q for a failed agent:\n%s", bad, report)
		}
	}
	t.Logf("collie doctor:\n%s", report)
}
