package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/doctor"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// packageFiles are paths the package must install (L4).
var packageFiles = []string{
	"/usr/bin/collie",
	"/usr/bin/collie-agent",
	"/usr/libexec/collie/collie-hook",
	"/usr/lib/systemd/user/collie.service",
	"/usr/lib/systemd/user/collie.service.d/sandbox.conf",
	"/usr/lib/systemd/user/collie-agent@.socket",
	"/usr/lib/systemd/user/collie-agent@.service",
	"/usr/share/man/man1/collie.1.gz",
	"/usr/share/man/man1/collie-agent.1.gz",
	"/usr/share/man/man5/collie.toml.5.gz",
	"/usr/share/man/man7/collie-durable.7.gz",
	"/usr/share/bash-completion/completions/collie",
	"/usr/share/zsh/vendor-completions/_collie",
	"/usr/share/fish/vendor_completions.d/collie.fish",
	"/usr/share/doc/collie/README.md.gz",
	"/usr/share/doc/collie/device-api.md.gz",
	"/usr/share/doc/collie/linux-integration.md.gz",
	"/usr/share/doc/collie/examples/collie-agent.toml",
	"/usr/share/doc/collie/copyright",
}

// TestDebInstall_L1_L2_L4_R14 is the install test: build the
// .deb, lintian it, dpkg -i it, then for a test user under a real systemd
// user manager enable the installed units, attach the demo agent, and see
// collie doctor pass and the journal hold the start line; break one thing
// at a time and see doctor name it with the exact reason and fix (T3, T4,
// K5); and finally dpkg -r removes every file it installed. The machine's
// package database is left as it was, also when the test fails.
func TestDebInstall_L1_L2_L4_R14(t *testing.T) {
	began := time.Now()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "the install test needs root (it runs dpkg -i)")
	}
	for _, tool := range []string{"make", "go", "dpkg", "dpkg-query", "dpkg-buildpackage", "dh", "lintian"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, tool+" is not installed (see .ci/deps)")
		}
	}
	// One install test at a time on a machine: two would install and
	// remove the same package under each other.
	lockDebTest(t)
	if status := dpkgStatus(); status != "" {
		testenv.Unavailable(t, "the collie package is already on this machine ("+status+"); this test installs and removes it, so remove it first: dpkg --purge collie")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	lap := time.Now()
	step := func(what string) {
		t.Logf("%-12s %v", what, time.Since(lap).Round(100*time.Millisecond))
		lap = time.Now()
	}

	deb := buildDeb(t, ctx)
	step("make deb")
	if out, err := exec.CommandContext(ctx, "lintian", "--fail-on", "error,warning,info", "--display-info", deb).CombinedOutput(); err != nil {
		t.Fatalf("lintian %s: %v\n%s", deb, err, out)
	}
	step("lintian")

	// Registered before dpkg -i, so it runs (after the user manager's
	// teardown, registered later) even when the test fails half way.
	t.Cleanup(func() {
		if dpkgStatus() == "" {
			return
		}
		if out, err := exec.Command("dpkg", "--purge", "collie").CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge collie: %v\n%s", err, out)
		}
	})
	// What of the package's paths the machine has before: dpkg -r must
	// leave exactly these.
	before := map[string]bool{}
	for _, p := range debPaths(t, ctx, deb) {
		if _, err := os.Lstat(p); err == nil {
			before[p] = true
		}
	}
	root(t, ctx, "dpkg", "-i", deb)
	installed := strings.Fields(root(t, ctx, "dpkg-query", "-L", "collie"))
	for _, f := range packageFiles {
		if !slices.Contains(installed, f) {
			t.Errorf("L4: the package does not install %s", f)
		}
	}
	checkVersions(t, ctx)
	checkShippedDocs(t, ctx)
	checkNamedDocsInstalled(t, installed)
	step("dpkg -i")

	um := systemdtest.Start(t)
	step("systemd")
	must := func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	// The installed units, as the user manager finds them in
	// /usr/lib/systemd/user, pass verify (their man pages are installed).
	if out, err := um.Command(ctx, "systemd-analyze", "--user", "verify",
		"/usr/lib/systemd/user/collie.service", "/usr/lib/systemd/user/collie-agent@.socket",
		"/usr/lib/systemd/user/collie-agent@.service").CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze --user verify of the installed units: %v\n%s", err, out)
	}

	// The device API on a port nobody else here uses: tests that run
	// at the same time start daemons on the default one.
	cfg := fmt.Sprintf("[devices]\nlisten = \"127.0.0.1:%d\"\n", freePort(t))
	if err := um.WriteFile(um.Home+"/.config/collie/config.toml", []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// What a new user does, as the README says.
	must(um.Systemctl(ctx, "enable", "--now", "collie-agent@demo.socket"))
	desk := um.RuntimeDir + "/desk"
	sock := desk + "/demo.sock"
	must(um.Run(ctx, "/usr/bin/collie", "durable", "attach", "demo", "--socket", sock))
	must(um.Systemctl(ctx, "enable", "--now", "collie"))
	if path := must(um.Systemctl(ctx, "show", "-p", "FragmentPath", "--value", "collie.service")); strings.TrimSpace(path) != "/usr/lib/systemd/user/collie.service" {
		t.Errorf("collie.service was loaded from %q, not the package's unit", path)
	}

	allOK := func(what string) {
		t.Helper()
		var last doctor.Report
		waitFor(t, 30*time.Second, "collie doctor to pass ("+what+")", func() bool {
			rep, code := runDoctor(t, ctx, um)
			last = rep
			return code == 0 && healthy(rep)
		})
		for _, r := range last.Rows {
			if r.Status != doctor.OK {
				t.Logf("%s: %s %s %s: %s", what, r.Status, r.Check, r.Subject, r.Message)
			}
		}
	}
	allOK("after install")
	text, err := um.Run(ctx, "/usr/bin/collie", "doctor")
	if err != nil {
		t.Fatalf("collie doctor: %v\n%s", err, text)
	}
	t.Logf("collie doctor:\n%s", text)
	step("doctor ok")

	// L2: the user reads the daemon's start line in the journal, with its
	// priority and MESSAGE_ID, and -p warning shows nothing while all is well.
	var started map[string]any
	waitFor(t, 20*time.Second, "the start line in journalctl --user -u collie", func() bool {
		for _, e := range userJournal(t, ctx, um, "-u", "collie") {
			if strings.HasPrefix(fmt.Sprint(e["MESSAGE"]), "collie daemon started (") {
				started = e
				return true
			}
		}
		return false
	})
	if started["PRIORITY"] != "6" || started["MESSAGE_ID"] != journald.MsgDaemonStarted || started["SYSLOG_IDENTIFIER"] != "collie" {
		t.Errorf("L2: the start line is %v; want PRIORITY=6, MESSAGE_ID=%s, SYSLOG_IDENTIFIER=collie", started, journald.MsgDaemonStarted)
	}
	if w := userJournal(t, ctx, um, "-u", "collie", "-p", "warning"); len(w) > 0 {
		t.Errorf("L2: journalctl --user -u collie -p warning shows %d lines while all is well: %v", len(w), w)
	}

	security := must(um.Run(ctx, "systemd-analyze", "--user", "security", "--no-pager", "collie.service"))
	if m := regexp.MustCompile(`Overall exposure level for collie.service: ([0-9.]+) (\S+)`).FindStringSubmatch(security); m == nil {
		t.Errorf("systemd-analyze --user security printed no score:\n%s", security)
	} else if score, _ := strconv.ParseFloat(m[1], 64); score > 6.0 {
		t.Errorf("collie.service's exposure is %s %s, above 6.0: a sandboxing setting was lost\n%s", m[1], m[2], security)
	} else {
		t.Logf("systemd-analyze --user security collie.service: %s %s", m[1], m[2])
	}
	if wd := strings.TrimSpace(must(um.Systemctl(ctx, "show", "-p", "WatchdogUSec", "--value", "collie.service"))); wd != "30s" {
		t.Errorf("collie.service's watchdog is %q; want 30s", wd)
	}
	step("journal")

	// Break one thing at a time: doctor names it, with the exact reason and
	// fix, and exits 1; the fix it gives mends it.
	sources := um.Home + "/.config/collie/sources.json"
	breaks := []struct {
		name           string
		breakIt        [][]string // commands run as the user
		check, subject string
		message, fix   string
		also           func(doctor.Report) error
		journal        string // the reason the daemon logs before the fix
	}{
		{
			name:    "T3_desk_folder_0755",
			breakIt: [][]string{{"chmod", "0755", desk}},
			check:   "desk", message: desk + " has mode 0755, not 0700", fix: "chmod 0700 " + desk,
			journal: "the socket's folder " + desk + " has mode 0755, not 0700",
			also: func(rep doctor.Report) error {
				return wantRow(rep, "durable-socket", "demo", doctor.Fail, "the socket's folder "+desk+" has mode 0755, not 0700", "chmod 0700 "+desk)
			},
		},
		{
			name:    "K5_sources_json_0644",
			breakIt: [][]string{{"chmod", "0644", sources}},
			check:   "sources", message: sources + " has mode 0644, so group or others can read it; it can hold tokens", fix: "chmod 0600 " + sources,
		},
		{
			name:    "L2_service_stopped",
			breakIt: [][]string{{"systemctl", "--user", "stop", "collie.service"}},
			check:   "units", subject: "collie.service",
			message: "collie.service is enabled but inactive (dead)", fix: "systemctl --user start collie.service",
			also: func(rep doctor.Report) error {
				return wantRow(rep, "daemon", "", doctor.Skip, "skipped: the daemon is not running", "systemctl --user start collie.service")
			},
		},
		{
			name:    "T3_socket_replaced_by_symlink",
			breakIt: [][]string{{"mv", sock, desk + "/real.sock"}, {"ln", "-s", "real.sock", sock}},
			check:   "durable-socket", subject: "demo",
			message: "socket-not-private: " + sock + " is a symlink",
			fix:     "rm " + sock + " && systemctl --user restart collie-agent@demo.socket",
		},
	}
	for _, b := range breaks {
		t.Run(b.name, func(t *testing.T) {
			for _, argv := range b.breakIt {
				must(um.Run(ctx, argv[0], argv[1:]...))
			}
			rep, code := runDoctor(t, ctx, um)
			if code != 1 || rep.OK {
				t.Errorf("collie doctor exited %d (ok %v); want 1", code, rep.OK)
			}
			if err := wantRow(rep, b.check, b.subject, doctor.Fail, b.message, b.fix); err != nil {
				t.Error(err)
			}
			if b.also != nil {
				if err := b.also(rep); err != nil {
					t.Error(err)
				}
			}
			if b.journal != "" {
				// T4: the daemon refuses the agent at its next poll and says
				// why, as a warning with its MESSAGE_ID.
				waitFor(t, 15*time.Second, "the unreachable warning in journalctl --user -u collie -p warning", func() bool {
					for _, e := range userJournal(t, ctx, um, "-u", "collie", "-p", "warning", "MESSAGE_ID="+journald.MsgAgentUnreachable) {
						if e["AGENT"] == "demo" && e["REASON"] == b.journal && e["PRIORITY"] == "4" {
							return true
						}
					}
					return false
				})
			}
			// Mend it with the very command doctor printed.
			must(um.Run(ctx, "/bin/sh", "-c", b.fix))
			allOK("after " + b.name)
		})
	}
	os.Remove(um.Path(desk + "/real.sock"))
	// L2: -p warning keeps to what needed attention.
	for _, e := range userJournal(t, ctx, um, "-u", "collie", "-p", "warning") {
		if m := fmt.Sprint(e["MESSAGE"]); strings.HasPrefix(m, "collie daemon started") || strings.Contains(m, "durable agent is reachable") {
			t.Errorf("L2: -p warning shows the info line %v", e)
		}
	}
	step("breaks")

	// dpkg -r removes every file and folder it installed, and only those.
	must(um.Systemctl(ctx, "disable", "--now", "collie.service", "collie-agent@demo.socket"))
	root(t, ctx, "dpkg", "-r", "collie")
	for _, p := range installed {
		p = filepath.Clean(p)
		if p == "/" {
			continue
		}
		_, err := os.Lstat(p)
		switch {
		case err == nil && !before[p]:
			t.Errorf("after dpkg -r, %s is still there", p)
		case errors.Is(err, os.ErrNotExist) && before[p]:
			t.Errorf("dpkg -r removed %s, which was there before the package", p)
		case err != nil && !errors.Is(err, os.ErrNotExist):
			t.Errorf("after dpkg -r: %v", err)
		}
	}
	root(t, ctx, "dpkg", "--purge", "collie")
	if s := dpkgStatus(); s != "" {
		t.Errorf("after dpkg --purge, dpkg still knows collie: %s", s)
	}
	step("dpkg -r")
	t.Logf("the install test took %v", time.Since(began).Round(time.Second))
}

// buildDeb runs make deb and returns the path of the package it built.
func buildDeb(t *testing.T, ctx context.Context) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "make", "deb")
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^build-deb: built (bin/\S+\.deb)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("make deb did not say what it built:\n%s", out)
	}
	abs, err := filepath.Abs(filepath.Join("../../..", string(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// root runs a command as root on the host and returns its output.
func root(t *testing.T, ctx context.Context, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// dpkgStatus says whether dpkg knows the collie package ("" when not):
// "ii" installed, "rc" removed with its configuration, and so on.
func dpkgStatus() string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Abbrev}", "collie").Output()
	s := strings.TrimSpace(string(out))
	if err != nil || s == "" || strings.HasPrefix(s, "un") || strings.HasPrefix(s, "pn") {
		return ""
	}
	return s
}

// checkVersions is R14 on the installed package: collie --version,
// collie-agent --version and the package's upstream version are one.
func checkVersions(t *testing.T, ctx context.Context) {
	t.Helper()
	pkg := strings.TrimSpace(root(t, ctx, "dpkg-query", "-W", "-f", "${Version}", "collie"))
	upstream, _, _ := strings.Cut(pkg, "-")
	for _, bin := range []string{"collie", "collie-agent"} {
		out := strings.TrimSpace(root(t, ctx, "/usr/bin/"+bin, "--version"))
		if want := bin + " " + upstream; out != want {
			t.Errorf("R14: /usr/bin/%s --version = %q; want %q (package %s)", bin, out, want, pkg)
		}
	}
}

// runDoctor runs collie doctor --json as the user and returns its report
// and exit status.
func runDoctor(t *testing.T, ctx context.Context, um *systemdtest.UserManager) (doctor.Report, int) {
	t.Helper()
	cmd := um.Command(ctx, "/usr/bin/collie", "doctor", "--json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("collie doctor: %v", err)
	}
	var rep doctor.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("collie doctor --json: %v\n%s\n%s", err, out, stderr.String())
	}
	return rep, code
}

// healthy: every row ok, except linger, which cannot be asked in the test's
// namespace (there is no logind) and must say so as a warning.
func healthy(rep doctor.Report) bool {
	for _, r := range rep.Rows {
		if r.Check == "linger" && r.Status == doctor.Warn && strings.HasPrefix(r.Message, "cannot check linger: ") {
			continue
		}
		if r.Status != doctor.OK {
			return false
		}
	}
	return len(rep.Rows) > 0
}

func wantRow(rep doctor.Report, check, subject string, status doctor.Status, message, fix string) error {
	for _, r := range rep.Rows {
		if r.Check != check || r.Subject != subject {
			continue
		}
		if r.Status != status || r.Message != message || r.Fix != fix {
			return fmt.Errorf("row %s %s = %s %q, fix %q; want %s %q, fix %q", check, subject, r.Status, r.Message, r.Fix, status, message, fix)
		}
		return nil
	}
	return fmt.Errorf("no row %s %s in %+v", check, subject, rep.Rows)
}

// userJournal runs journalctl --user as the test user, as a user would, and
// returns its entries.
func userJournal(t *testing.T, ctx context.Context, um *systemdtest.UserManager, args ...string) []map[string]any {
	t.Helper()
	out, err := um.Run(ctx, "journalctl", append([]string{"--user", "--no-pager", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatalf("journalctl --user: %v\n%s", err, out)
	}
	var entries []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			entries = append(entries, e)
		}
	}
	return entries
}

// debPaths lists the paths in a .deb, as dpkg-query -L will name them.
func debPaths(t *testing.T, ctx context.Context, deb string) []string {
	t.Helper()
	var paths []string
	out := root(t, ctx, "sh", "-c", "dpkg-deb --fsys-tarfile \"$1\" | tar -t", "sh", deb)
	for _, line := range strings.Split(out, "\n") {
		p := filepath.Clean("/" + strings.TrimPrefix(line, "."))
		if p != "/" && line != "" {
			paths = append(paths, p)
		}
	}
	return paths
}

// lockDebTest holds a machine-wide lock until the test ends; another
// install test (another test binary) waits for it. The lock goes with the
// process, so a test binary that dies frees it.
func lockDebTest(t *testing.T) {
	t.Helper()
	path := "/run/lock/collie-debtest.lock"
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		path = "/tmp/collie-debtest.lock"
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Logf("waiting for %s: another install test is running", path)
		for {
			if err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			t.Fatalf("locking %s: %v", path, err)
		}
	}
}

// freePort returns a TCP port on loopback that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// checkShippedDocs: the example agent config the package ships is one the
// installed collie-agent accepts, and debian/copyright
// names the license in DEP-5 form with Debian's pointer (item 16).
func checkShippedDocs(t *testing.T, ctx context.Context) {
	t.Helper()
	example := "/usr/share/doc/collie/examples/collie-agent.toml"
	if out, err := exec.CommandContext(ctx, "/usr/bin/collie-agent", "--check-config", "--config", example).CombinedOutput(); err != nil {
		t.Errorf("L4: the shipped example %s is refused by collie-agent --check-config: %v\n%s", example, err, out)
	}
	cr, err := os.ReadFile("/usr/share/doc/collie/copyright")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Files: *\n", "License: Apache-2.0\n", "/usr/share/common-licenses/Apache-2.0"} {
		if !strings.Contains(string(cr), want) {
			t.Errorf("the installed copyright file lacks %q:\n%s", want, cr)
		}
	}
}
