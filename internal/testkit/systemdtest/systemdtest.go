//go:build linux

package systemdtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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

	"github.com/collie-linux/collie/internal/testkit/testbuf"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// UserName is the account the user manager runs as; see the package doc.
const UserName = "collie-e2e"

const (
	systemdPath  = "/lib/systemd/systemd"
	journaldPath = "/usr/lib/systemd/systemd-journald"
	lockPath     = "/run/lock/collie-systemdtest.lock"

	// runScope is the cgroup, beside user@UID.service, that commands
	// started by Run, RunRoot and Command live in, so that teardown can
	// find them.
	runScope = "systemdtest-run.scope"

	// homePrefix names the temporary directories that hold the homes.
	homePrefix = "collie-systemdtest-"

	// startTimeout bounds all of Start; stopTimeout each step of teardown.
	startTimeout = 60 * time.Second
	stopTimeout  = 5 * time.Second
)

// nsMounts are the directories where the namespace may see something
// else than the host: the tmpfs mounts of holderScript (/var/log when
// there is no /var/log/journal) and /sys/fs/cgroup on hybrid machines.
// Path maps paths under them.
var nsMounts = []string{"/run/systemd", "/run/user", "/run/log", "/var/log", "/sys/fs/cgroup"}

// UserManager is a running systemd --user (and journald) for one test.
// Its methods run commands inside its mount namespace, where
// /run/user/UID, /run/systemd and the journal are the test's own.
type UserManager struct {
	User       string // the test user's name, UserName
	UID, GID   int
	Home       string // $HOME, a fresh directory owned by the user
	RuntimeDir string // $XDG_RUNTIME_DIR, /run/user/UID (inside the namespace; see Path)

	// BusAddress is the user's session bus,
	// "unix:path=/run/user/UID/bus", or "" when the manager has no
	// dbus.socket (dbus-user-session not installed). The bus daemon is
	// socket-activated on first use.
	BusAddress string

	t     testing.TB
	tools tools
	cg    *cgroups
	// The cgroups of the manager and of Run's commands, open for
	// CLONE_INTO_CGROUP.
	serviceCG, scopeCG *os.File
	runDir             string // holds Home; removed on teardown
	unlock             func()

	holder   *exec.Cmd
	holderIn io.WriteCloser

	journald     *exec.Cmd
	journaldDone chan struct{}

	manager     *exec.Cmd
	managerDone chan struct{}
	managerLog  *testbuf.Buffer
	dumped      bool // diagnostics already logged
}

// Start starts journald and a user manager for the test user in a fresh
// mount namespace and returns once the manager is running. Everything is
// stopped and removed by t.Cleanup. It skips the test, or fails it when
// CI=true, where this cannot work (not root, no systemd, …).
//
// Start holds a machine-wide lock until teardown: another Start, in this
// or another process, waits for it.
func Start(t testing.TB) *UserManager {
	t.Helper()
	began := time.Now()
	tl, reason := checkPrerequisites()
	if reason != "" {
		unavailable(t, reason)
	}

	unlock, err := lockMachine(t)
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	um := &UserManager{t: t, tools: tl, unlock: unlock}
	// Registered first so that it also undoes a Start that fails half way.
	t.Cleanup(um.stop)
	locked := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := um.start(ctx); err != nil {
		um.dumped = true
		t.Fatalf("systemdtest: %v%s", err, um.diagnostics())
	}
	t.Logf("systemdtest: user manager for %s (uid %d) running after %v (lock %v, setup %v)",
		um.User, um.UID, time.Since(began).Round(time.Millisecond),
		locked.Sub(began).Round(time.Millisecond), time.Since(locked).Round(time.Millisecond))
	return um
}

// unavailable skips the test with reason, or fails it under CI=true:
// tests that need the real thing must not pass in CI by skipping.
func unavailable(t testing.TB, reason string) {
	t.Helper()
	testenv.Unavailable(t, "systemdtest: cannot run a systemd user manager: "+reason)
}

func (um *UserManager) start(ctx context.Context) error {
	phase := time.Now()
	lap := func(what string) {
		um.t.Logf("systemdtest: %-10s %v", what, time.Since(phase).Round(time.Millisecond))
		phase = time.Now()
	}

	u, err := ensureUser(ctx, um.tools)
	if err != nil {
		return err
	}
	um.User, um.UID, um.GID = u.name, u.uid, u.gid
	um.RuntimeDir = fmt.Sprintf("/run/user/%d", um.UID)
	if um.UID < 1000 {
		um.t.Logf("systemdtest: warning: %s has uid %d < 1000: journald keeps a system user's messages in the system journal, so there is no user-%d.journal",
			um.User, um.UID, um.UID)
	}
	um.cg = newCgroups(um.UID)
	// A test binary that died without teardown leaves its services behind.
	if n, err := um.cg.sweep(um.UID); err != nil {
		return fmt.Errorf("removing leftovers of an earlier run: %w", err)
	} else if n > 0 {
		um.t.Logf("systemdtest: removed leftovers of an earlier run (%d processes)", n)
	}
	// So does its home; with the lock held, no other run has one.
	stale, _ := filepath.Glob(filepath.Join(traversableTempDir(), homePrefix+"*"))
	for _, dir := range stale {
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("removing leftovers of an earlier run: %w", err)
		}
	}
	lap("user")

	if err := um.makeHome(); err != nil {
		return err
	}
	if err := um.startHolder(); err != nil {
		return err
	}
	lap("namespace")

	if err := um.startJournald(ctx); err != nil {
		return err
	}
	lap("journald")

	if err := um.cg.create(um.UID, um.GID); err != nil {
		return err
	}
	if um.serviceCG, err = os.Open(um.cg.host(um.cg.service())); err != nil {
		return err
	}
	if um.scopeCG, err = os.Open(um.cg.host(um.cg.scope())); err != nil {
		return err
	}
	if err := um.startManager(ctx); err != nil {
		return err
	}
	lap("manager")

	if _, err := os.Stat(um.Path(filepath.Join(um.RuntimeDir, "bus"))); err == nil {
		um.BusAddress = "unix:path=" + filepath.Join(um.RuntimeDir, "bus")
	}
	return nil
}

// makeHome creates a fresh $HOME for the user. Its parent is
// world-traversable (t.TempDir's parents are 0700 root, which the user
// could not enter).
func (um *UserManager) makeHome() error {
	dir, err := os.MkdirTemp(traversableTempDir(), homePrefix)
	if err != nil {
		return err
	}
	um.runDir = dir
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	um.Home = filepath.Join(dir, "home")
	if err := os.Mkdir(um.Home, 0o700); err != nil {
		return err
	}
	return os.Chown(um.Home, um.UID, um.GID)
}

// holderScript runs as root inside the new mount namespace, with the
// host's cgroup2 mount point and the in-namespace path of
// user-UID.slice/cgroup.kill as arguments. It mounts the namespace's own
// file systems, says "ready", and then keeps the namespace alive until
// its stdin closes: at teardown, or when the test binary dies. The
// namespace ends when its last process does.
const holderScript = `set -eu
cgroot=$1 slicekill=$2
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run/systemd
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run/user
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /run/log
if [ -d /var/log/journal ]; then
	mount -t tmpfs -o mode=2755,nosuid,nodev tmpfs /var/log/journal
else
	# Without /var/log/journal journald would create it on the host; a
	# tmpfs on /var/log, seen only in this namespace, keeps it here.
	mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /var/log
	mkdir -m 2755 /var/log/journal
fi
chgrp systemd-journal /var/log/journal 2>/dev/null || true
# systemd picks its cgroup mode by what is mounted on /sys/fs/cgroup. On
# a hybrid machine (tmpfs there, cgroup2 on /sys/fs/cgroup/unified), bind
# the cgroup2 tree over it, so that journald and the manager run in
# unified mode, as on current distributions.
if [ "$cgroot" != /sys/fs/cgroup ]; then
	mount --bind "$cgroot" /sys/fs/cgroup
fi
echo ready
read -r _ || true
# Reached at teardown, after the harness has killed everything, or when
# the test binary died: then kill what it left in the user's slice, so
# that its services do not outlive it.
if [ -e "$slicekill" ]; then echo 1 >"$slicekill" || true; fi
`

func (um *UserManager) startHolder() error {
	// unshare execs the shell without forking, so the holder's pid is the
	// shell's, and nsenter --target it enters the namespace.
	cmd := exec.Command(um.tools.unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", holderScript, "sh",
		um.cg.root, filepath.Join("/sys/fs/cgroup", um.cg.slice(), "cgroup.kill"))
	// No parent-death signal here: the holder notices the test binary's
	// death by the end of its stdin, and cleans up.
	cmd.Env = rootEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the namespace holder: %w", err)
	}
	um.holder, um.holderIn = cmd, in
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		// The script has failed and exited; Wait collects all it said.
		err := cmd.Wait()
		um.holder = nil
		return fmt.Errorf("setting up the mount namespace failed: %v: %s", err, strings.TrimSpace(stderr.String()))
	}

	// The rest of the setup is plain file work, done from here through
	// /proc/PID/root, which resolves paths in the holder's mount namespace.
	if err := os.MkdirAll(um.Path("/run/systemd/system"), 0o755); err != nil {
		return err
	}
	// PID 1 makes unit-root; a manager bind-mounts / there to build the
	// mount namespace of a sandboxed unit (ProtectSystem= and the like),
	// and fails at step NAMESPACE without it.
	if err := os.MkdirAll(um.Path("/run/systemd/unit-root"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(um.Path("/run/systemd/journald.conf.d"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(um.Path("/run/systemd/journald.conf.d/systemdtest.conf"), []byte(journaldConf), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(um.Path("/run/systemd/journal"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(um.Path("/run/systemd/journal/flushed"), nil, 0o644); err != nil {
		return err
	}
	if err := os.Mkdir(um.Path(um.RuntimeDir), 0o700); err != nil {
		return err
	}
	return os.Chown(um.Path(um.RuntimeDir), um.UID, um.GID)
}

// journaldConf is read by journald from /run/systemd/journald.conf.d,
// which is the namespace's own, so the host's configuration is kept.
const journaldConf = `# Written by collie's systemdtest.
[Journal]
# Per-user journals (user-UID.journal) only exist with persistent storage;
# /var/log/journal is a tmpfs in the test's mount namespace.
Storage=persistent
SplitMode=uid
# The host's kernel log and audit messages are not the test's business.
ReadKMsg=no
Audit=no
ForwardToSyslog=no
ForwardToKMsg=no
ForwardToConsole=no
ForwardToWall=no
# Tests log bursts; a dropped line would be a flaky test.
RateLimitIntervalSec=0
`

func (um *UserManager) startJournald(ctx context.Context) error {
	cmd := exec.Command(um.tools.nsenter, "--target", strconv.Itoa(um.holder.Process.Pid), "--mount", "--wd=/", "--", journaldPath)
	// If the test binary dies, journald dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = rootEnv()
	var log testbuf.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting systemd-journald: %w", err)
	}
	um.journald = cmd
	um.journaldDone = make(chan struct{})
	go func() { _ = cmd.Wait(); close(um.journaldDone) }()

	// Not socket-activated, journald binds its sockets itself; the stdout
	// socket, which services' output goes to, is the one that matters.
	err := waitFor(ctx, um.journaldDone, func() bool { return isSocket(um.Path("/run/systemd/journal/stdout")) })
	if err != nil {
		return fmt.Errorf("waiting for systemd-journald: %w: %s", err, strings.TrimSpace(log.String()))
	}
	return nil
}

func (um *UserManager) startManager(ctx context.Context) error {
	args := []string{um.tools.setpriv, "--reuid", strconv.Itoa(um.UID), "--regid", strconv.Itoa(um.GID), "--init-groups",
		// Dropping root clears the parent-death signal; keep it, so that
		// the manager dies with the test binary.
		"--pdeathsig", "keep",
		"--", systemdPath, "--user",
		// Under user@.service the manager's stderr is the journal; here it
		// is not, and with the default target it would log there.
		"--log-target=journal"}
	cmd := um.nsCommand(context.Background(), um.serviceCG, um.Home, args)
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Env = um.managerEnv()
	um.managerLog = new(testbuf.Buffer)
	cmd.Stdout, cmd.Stderr = um.managerLog, um.managerLog
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting systemd --user: %w", err)
	}
	um.manager = cmd
	um.managerDone = make(chan struct{})
	go func() { _ = cmd.Wait(); close(um.managerDone) }()

	// systemctl cannot connect before the private socket exists; after
	// that, is-system-running --wait returns once start-up is complete.
	private := um.Path(filepath.Join(um.RuntimeDir, "systemd/private"))
	if err := waitFor(ctx, um.managerDone, func() bool { return isSocket(private) }); err != nil {
		return fmt.Errorf("waiting for systemd --user to listen on %s: %w", private, err)
	}
	out, err := um.Systemctl(ctx, "is-system-running", "--wait")
	state := strings.TrimSpace(out)
	switch {
	case state == "running":
	case state == "degraded":
		// Some unit of the machine's own failed; not fatal for tests of
		// collie's units, but worth knowing when one fails.
		failed, _ := um.Systemctl(ctx, "--failed", "--no-legend", "--plain")
		um.t.Logf("systemdtest: the user manager is degraded; failed units:\n%s", failed)
	default:
		return fmt.Errorf("systemd --user did not come up: is-system-running said %q: %v", state, err)
	}
	return nil
}

// stop tears everything down; see the package doc. Each step is
// attempted even if an earlier one failed.
func (um *UserManager) stop() {
	began := time.Now()
	if um.t.Failed() && um.journald != nil && !um.dumped {
		um.t.Logf("systemdtest: the test failed; the end of the journal:%s", um.diagnostics())
	}

	// A user manager answers SIGTERM by starting exit.target: its units
	// are stopped in order, as at logout.
	if um.manager != nil {
		_ = um.manager.Process.Signal(syscall.SIGTERM)
		select {
		case <-um.managerDone:
		case <-time.After(stopTimeout):
			um.t.Logf("systemdtest: systemd --user did not exit within %v of SIGTERM; killing it", stopTimeout)
		}
	}
	// Whatever is left (a service that ignored SIGTERM, a background
	// process started by Run) is killed through the cgroups.
	if um.cg != nil {
		if _, err := um.cg.kill(); err != nil {
			um.t.Errorf("systemdtest: %v", err)
		}
	}
	if um.manager != nil {
		<-um.managerDone
	}
	if um.journald != nil {
		_ = um.journald.Process.Signal(syscall.SIGTERM)
		select {
		case <-um.journaldDone:
		case <-time.After(stopTimeout):
			_ = um.journald.Process.Kill()
			<-um.journaldDone
		}
	}
	// Closing its stdin ends the holder, the last process in the
	// namespace: the namespace and its tmpfs mounts go with it.
	if um.holder != nil {
		_ = um.holderIn.Close()
		done := make(chan error, 1)
		go func() { done <- um.holder.Wait() }()
		select {
		case <-done:
		case <-time.After(stopTimeout):
			_ = um.holder.Process.Kill()
			<-done
		}
	}
	for _, f := range []*os.File{um.serviceCG, um.scopeCG} {
		if f != nil {
			f.Close()
		}
	}
	if um.cg != nil {
		if err := um.cg.remove(); err != nil {
			um.t.Errorf("systemdtest: %v", err)
		}
	}
	if um.runDir != "" {
		if err := os.RemoveAll(um.runDir); err != nil {
			um.t.Errorf("systemdtest: removing %s: %v", um.runDir, err)
		}
	}
	if um.UID > 0 {
		if pids := processesOf(um.UID); len(pids) > 0 {
			um.t.Errorf("systemdtest: processes of %s survived teardown: %v", um.User, pids)
		}
	}
	um.unlock()
	um.t.Logf("systemdtest: teardown took %v", time.Since(began).Round(time.Millisecond))
}

// diagnostics returns the manager's own output and the end of the
// journal, for failure messages.
func (um *UserManager) diagnostics() string {
	var b strings.Builder
	if out := um.managerLog.String(); out != "" {
		fmt.Fprintf(&b, "\nsystemd --user output:\n%s", out)
	}
	if um.journald != nil && um.holder != nil {
		select {
		case <-um.journaldDone:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, _ := um.Journal(ctx, "-n", "100", "-o", "short-monotonic")
			fmt.Fprintf(&b, "\njournal (last 100 lines):\n%s", out)
		}
	}
	return b.String()
}

// waitFor polls cond until it holds, ctx ends, or died is closed (the
// process being waited for exited).
func waitFor(ctx context.Context, died <-chan struct{}, cond func() bool) error {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-died:
			return errors.New("the process exited")
		case <-tick.C:
		}
	}
	return nil
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}
