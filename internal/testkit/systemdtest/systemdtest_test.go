//go:build linux

package systemdtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// timer logs how long each phase of a test took.
func timer(t *testing.T) func(string) {
	last := time.Now()
	return func(phase string) {
		t.Logf("%-28s %v", phase, time.Since(last).Round(time.Millisecond))
		last = time.Now()
	}
}

const demoSocket = `[Unit]
Description=systemdtest demo socket %i

[Socket]
ListenStream=%t/desk/%i.sock
SocketMode=0600
DirectoryMode=0700
Accept=no

[Install]
WantedBy=sockets.target
`

// TestSocketActivation is the shape of collie-agent@NAME.socket: a
// template socket under %t/desk, activated by a connection, its service
// logging to the journal.
func TestSocketActivation(t *testing.T) {
	lap := timer(t)
	um := Start(t)
	lap("Start")
	ctx := testContext(t)

	bin := BinDir(t)
	script, err := os.ReadFile("testdata/demo-service.py")
	if err != nil {
		t.Fatal(err)
	}
	service := filepath.Join(bin, "demo-service.py")
	if err := os.WriteFile(service, script, 0o755); err != nil {
		t.Fatal(err)
	}
	um.InstallUnit("demo@.socket", demoSocket)
	um.InstallUnit("demo@.service", "[Service]\nExecStart=/usr/bin/python3 "+service+"\n")
	lap("install units")

	if out, err := um.Systemctl(ctx, "enable", "--now", "demo@x.socket"); err != nil {
		t.Fatalf("enable --now: %v\n%s", err, out)
	}
	lap("enable --now")

	// The socket and its directory, as the manager made them.
	sock := filepath.Join(um.RuntimeDir, "desk/x.sock")
	checkOwned(t, um, sock, os.ModeSocket|0o600)
	checkOwned(t, um, filepath.Dir(sock), os.ModeDir|0o700)
	if active, err := um.Systemctl(ctx, "is-active", "demo@x.service"); strings.TrimSpace(active) != "inactive" {
		t.Errorf("demo@x.service before any connection: %q, %v; want inactive", active, err)
	}

	// A connection, as the user, activates the service.
	client := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print(s.makefile().readline(), end="")`
	out, err := um.Run(ctx, "/usr/bin/python3", "-c", client, sock)
	if err != nil || out != "hello\n" {
		t.Fatalf("client got %q, %v; want hello", out, err)
	}
	lap("connect (activation)")
	out, err = um.Run(ctx, "/usr/bin/python3", "-c", client, sock)
	if err != nil || out != "hello\n" {
		t.Fatalf("second client got %q, %v; want hello", out, err)
	}
	lap("connect (running)")

	// journald attributes the service's stdout to the user unit.
	e, err := um.WaitJournal(ctx, func(e JournalEntry) bool {
		return strings.HasPrefix(e["MESSAGE"], "LISTEN_FDS=")
	}, "_SYSTEMD_USER_UNIT=demo@x.service")
	if err != nil {
		t.Fatal(err)
	}
	lap("journal")
	t.Logf("journal: %s", e["MESSAGE"])
	want := fmt.Sprintf("LISTEN_FDS=1 LISTEN_PID=%s LISTEN_FDNAMES=demo@x.socket pid=%s", e["_PID"], e["_PID"])
	if e["MESSAGE"] != want {
		t.Errorf("MESSAGE = %q, want %q", e["MESSAGE"], want)
	}
	for field, want := range map[string]string{
		"_UID":               strconv.Itoa(um.UID),
		"_SYSTEMD_OWNER_UID": strconv.Itoa(um.UID),
		"_SYSTEMD_UNIT":      fmt.Sprintf("user@%d.service", um.UID),
		"_TRANSPORT":         "stdout",
	} {
		if e[field] != want {
			t.Errorf("%s = %q, want %q", field, e[field], want)
		}
	}

	// The entry is in the user's own journal file, which the user can
	// read with journalctl --user.
	files, _ := filepath.Glob(um.Path(fmt.Sprintf("/var/log/journal/*/user-%d.journal", um.UID)))
	if len(files) != 1 {
		t.Errorf("user journal files: %v, want one user-%d.journal", files, um.UID)
	}
	out, err = um.Run(ctx, um.tools.journalctl, "--user", "-o", "cat", "--user-unit=demo@x.service")
	if err != nil || !strings.Contains(out, "LISTEN_FDS=1 ") {
		t.Errorf("journalctl --user as %s: %q, %v", um.User, out, err)
	}
	lap("journalctl --user")
}

// checkOwned checks that path, in the namespace, has mode and belongs to
// the test user.
func checkOwned(t *testing.T, um *UserManager, path string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(um.Path(path))
	if err != nil {
		t.Error(err)
		return
	}
	if fi.Mode() != mode {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != um.UID || int(st.Gid) != um.GID {
		t.Errorf("%s: owned by %d:%d, want %d:%d", path, st.Uid, st.Gid, um.UID, um.GID)
	}
}

// TestJournalPriority checks that a service's "<N>" line prefix becomes
// the entry's PRIORITY, as collie's plain-stderr logging relies on.
func TestJournalPriority(t *testing.T) {
	lap := timer(t)
	um := Start(t)
	lap("Start")
	ctx := testContext(t)

	// The service stays up after logging: journald reads the unit from
	// the sender's cgroup, and a process that is already gone by then is
	// logged without _SYSTEMD_USER_UNIT (seen under load).
	um.InstallUnit("prio.service", `[Service]
Type=simple
ExecStart=/bin/sh -c "echo '<3>bad thing' >&2; echo 'plain thing'; exec sleep 600"
`)
	if out, err := um.Systemctl(ctx, "start", "prio.service"); err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	for msg, prio := range map[string]string{"bad thing": "3", "plain thing": "6"} {
		e, err := um.WaitJournal(ctx, func(e JournalEntry) bool { return e["MESSAGE"] == msg },
			"_SYSTEMD_USER_UNIT=prio.service")
		if err != nil {
			t.Fatal(err)
		}
		if e["PRIORITY"] != prio {
			t.Errorf("%q: PRIORITY = %q, want %s", msg, e["PRIORITY"], prio)
		}
	}
	lap("journal")
	// journalctl's own filter agrees.
	out, err := um.Journal(ctx, "-o", "cat", "-p", "err", "_SYSTEMD_USER_UNIT=prio.service")
	if err != nil || strings.TrimSpace(out) != "bad thing" {
		t.Errorf("journalctl -p err: %q, %v; want just the bad thing", out, err)
	}
}

// TestSessionBus checks that the user's D-Bus session bus works, as
// go-systemd's dbus client in `collie doctor` needs: the manager answers
// on it.
func TestSessionBus(t *testing.T) {
	lap := timer(t)
	um := Start(t)
	lap("Start")
	ctx := testContext(t)
	if um.BusAddress == "" {
		testenv.Unavailable(t, "no session bus: package dbus-user-session is not installed (see .ci/deps)")
	}
	out, err := um.Run(ctx, "busctl", "--user", "get-property", "org.freedesktop.systemd1",
		"/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "Version")
	if err != nil || !strings.HasPrefix(out, `s "`) {
		t.Fatalf("busctl --user get-property Version: %q, %v", out, err)
	}
	lap("first bus call (activation)")
	t.Logf("systemd version over the session bus: %s", strings.TrimSpace(out))
	out, err = um.Run(ctx, "busctl", "--user", "get-property", "org.freedesktop.systemd1",
		"/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "SystemState")
	if err != nil || !strings.Contains(out, "running") {
		t.Errorf("SystemState over the bus: %q, %v", out, err)
	}
	lap("second bus call")
}

// TestTeardown checks that nothing outlives a test: no process of the
// user (a background process left by Run included), no cgroup, no home,
// no mount namespace, and no change to the host's mounts.
func TestTeardown(t *testing.T) {
	before := mountPoints(t)
	var (
		uid, managerPID int
		home            string
		mntNS           string
		slices          []string
	)
	t.Run("run", func(t *testing.T) {
		um := Start(t)
		ctx := testContext(t)
		uid, managerPID, home = um.UID, um.ManagerPID(), um.Home
		mntNS, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", um.holder.Process.Pid))
		slices = append(slices, um.cg.host(um.cg.slice()))
		// A stray background process, which only the cgroup finds.
		if out, err := um.Run(ctx, "/bin/sh", "-c", "sleep 600 </dev/null >/dev/null 2>&1 &"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(processesOf(uid)) < 2 {
			t.Fatalf("expected the manager and sleep to run as %d: %v", uid, processesOf(uid))
		}
		// The namespace's mounts are not on the host.
		if own, _ := os.Readlink("/proc/self/ns/mnt"); own == mntNS {
			t.Fatal("the manager runs in the test's own mount namespace")
		}
	})
	if t.Failed() || uid == 0 {
		return
	}

	if pids := processesOf(uid); len(pids) > 0 {
		t.Errorf("processes of uid %d after teardown: %v", uid, describe(pids))
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", managerPID)); err == nil {
		t.Errorf("systemd --user (pid %d) still exists", managerPID)
	}
	for _, s := range slices {
		if _, err := os.Stat(s); err == nil {
			t.Errorf("cgroup %s still exists", s)
		}
	}
	if _, err := os.Stat(home); err == nil {
		t.Errorf("home %s still exists", home)
	}
	if pids := inMountNS(mntNS); len(pids) > 0 {
		t.Errorf("processes still in the test's mount namespace %s: %v", mntNS, describe(pids))
	}
	after := mountPoints(t)
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Errorf("host mounts changed:\nbefore %q\nafter  %q", before, after)
	}
}

// mountPoints returns the mount points of this process's (the host's)
// mount namespace.
func mountPoints(t *testing.T) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 4 {
			mps = append(mps, fields[4])
		}
	}
	return mps
}

func inMountNS(ns string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns/mnt")); err == nil && link == ns {
			pids = append(pids, pid)
		}
	}
	return pids
}

func describe(pids []int) []string {
	var d []string
	for _, pid := range pids {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		d = append(d, fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " ")))
	}
	return d
}

// TestUnavailable runs this test binary as nobody: Start must skip with
// the reason, and fail instead under CI=true.
func TestUnavailable(t *testing.T) {
	testenv.RequireRoot(t, "run the test binary as nobody")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(BinDir(t), "systemdtest.test")
	copyFile(t, self, bin)

	run := func(ci string) (string, error) {
		cmd := exec.Command(findTool("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups", "--",
			bin, "-test.run=^TestSocketActivation$", "-test.v", "-test.count=1")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "TMPDIR=/tmp"}
		if ci != "" {
			cmd.Env = append(cmd.Env, "CI="+ci)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// The inner runs' output is only shown when it is wrong: its expected
	// "--- FAIL" would read like a failure of this test.
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP: TestSocketActivation") || !strings.Contains(out, "needs root") {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
	t.Logf("as nobody: %s", reasonLine(out))

	out, err = run("true")
	if err == nil || !strings.Contains(out, "--- FAIL: TestSocketActivation") || !strings.Contains(out, "CI=true") {
		t.Errorf("as nobody with CI=true: %v\n%s", err, out)
	}
	t.Logf("as nobody with CI=true (%v): %s", err, reasonLine(out))
}

func reasonLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if _, reason, ok := strings.Cut(line, "systemdtest: "); ok {
			return reason
		}
	}
	return ""
}

func copyFile(t *testing.T, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
