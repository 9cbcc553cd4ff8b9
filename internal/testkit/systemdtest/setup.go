//go:build linux

package systemdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tools are the programs the harness runs, found in the usual
// directories rather than on $PATH (which may be the caller's).
type tools struct {
	unshare, nsenter, setpriv string // util-linux
	systemctl, journalctl     string // systemd
	useradd                   string // passwd
}

var toolDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}

func findTool(name string) string {
	for _, d := range toolDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// checkPrerequisites returns the tools, or why a user manager cannot run
// here.
func checkPrerequisites() (tools, string) {
	var tl tools
	if runtime.GOOS != "linux" {
		return tl, "not Linux"
	}
	if uid := os.Geteuid(); uid != 0 {
		return tl, fmt.Sprintf("needs root (it creates a mount namespace, cgroups and the user %s), running as uid %d", UserName, uid)
	}
	for _, p := range []string{systemdPath, journaldPath} {
		if _, err := os.Stat(p); err != nil {
			return tl, fmt.Sprintf("%s not found (Debian package systemd)", p)
		}
	}
	for _, t := range []struct {
		dst       *string
		name, pkg string
	}{
		{&tl.unshare, "unshare", "util-linux"},
		{&tl.nsenter, "nsenter", "util-linux"},
		{&tl.setpriv, "setpriv", "util-linux"},
		{&tl.systemctl, "systemctl", "systemd"},
		{&tl.journalctl, "journalctl", "systemd"},
		{&tl.useradd, "useradd", "passwd"},
	} {
		if *t.dst = findTool(t.name); *t.dst == "" {
			return tl, fmt.Sprintf("%s not found (Debian package %s)", t.name, t.pkg)
		}
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		return tl, "/bin/sh not found"
	}
	// With systemd as PID 1 the cgroup tree, user.slice included, is
	// managed by it; creating user@UID.service behind its back would
	// fight it (and a real login of the user).
	if comm, err := os.ReadFile("/proc/1/comm"); err == nil && strings.TrimSpace(string(comm)) == "systemd" {
		return tl, "PID 1 is systemd, which owns the cgroup tree; this harness runs on machines without it (as CI does)"
	}
	if cgroup2Root() == "" {
		return tl, "no cgroup2 hierarchy is mounted"
	}
	return tl, ""
}

// lockMachine takes the machine-wide lock that keeps one user manager of
// the test user running at a time. flock is tied to the open file, so
// the lock goes away with a test binary that dies, and two Starts in one
// process exclude each other too.
func lockMachine(t testing.TB) (func(), error) {
	path := lockPath
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		path = filepath.Join("/tmp", filepath.Base(lockPath))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Logf("systemdtest: waiting for %s (another test is using the user manager)", path)
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if err != syscall.EINTR {
				break
			}
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
	}
	return func() { f.Close() }, nil
}

type account struct {
	name     string
	uid, gid int
}

// ensureUser returns the test user, creating it if missing; see the
// package doc for why it is a regular account that is kept.
func ensureUser(ctx context.Context, tl tools) (account, error) {
	u, err := user.Lookup(UserName)
	if errors.As(err, new(user.UnknownUserError)) {
		out, uerr := exec.CommandContext(ctx, tl.useradd, "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
			"--comment", "collie systemdtest user", UserName).CombinedOutput()
		if uerr != nil {
			return account{}, fmt.Errorf("creating the test user: useradd: %v: %s", uerr, out)
		}
		u, err = user.Lookup(UserName)
	}
	if err != nil {
		return account{}, fmt.Errorf("looking up the test user: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return account{}, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return account{}, err
	}
	return account{name: u.Username, uid: uid, gid: gid}, nil
}

// cgroup2Root returns the mount point of the cgroup2 hierarchy:
// /sys/fs/cgroup on unified machines, /sys/fs/cgroup/unified on hybrid
// ones, "" if there is none.
func cgroup2Root() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) >= 5 && len(rf) >= 1 && rf[0] == "cgroup2" && lf[3] == "/" {
			return lf[4]
		}
	}
	return ""
}

// cgroups are the test user's cgroups in the cgroup2 hierarchy, which the
// namespace sees at /sys/fs/cgroup (see holderScript).
type cgroups struct {
	root string // on the host
	uid  int
}

func newCgroups(uid int) *cgroups { return &cgroups{root: cgroup2Root(), uid: uid} }

// slice is user.slice/user-UID.slice, relative to the hierarchy's root.
func (c *cgroups) slice() string {
	return filepath.Join("user.slice", fmt.Sprintf("user-%d.slice", c.uid))
}

// service is the manager's cgroup; journald derives _SYSTEMD_USER_UNIT
// and _SYSTEMD_OWNER_UID from this path, so the names matter.
func (c *cgroups) service() string {
	return filepath.Join(c.slice(), fmt.Sprintf("user@%d.service", c.uid))
}

// scope is the cgroup for the commands of Run, RunRoot and Command.
func (c *cgroups) scope() string { return filepath.Join(c.slice(), runScope) }

// host returns where a cgroup is on the host.
func (c *cgroups) host(cg string) string { return filepath.Join(c.root, cg) }

// delegated are the files systemd chowns when it delegates a cgroup
// (Delegate=yes on user@.service); the manager needs them to create its
// sub-cgroups and move its services' processes into them.
var delegated = []string{".", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"}

// create makes user.slice/user-UID.slice/user@UID.service, delegated to
// the user, and the scope for Run's commands.
func (c *cgroups) create(uid, gid int) error {
	svc := c.host(c.service())
	if err := os.MkdirAll(svc, 0o755); err != nil {
		return fmt.Errorf("creating cgroup: %w", err)
	}
	for _, name := range delegated {
		if err := os.Chown(filepath.Join(svc, name), uid, gid); err != nil {
			return fmt.Errorf("delegating cgroup: %w", err)
		}
	}
	if err := os.Mkdir(c.host(c.scope()), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("creating cgroup: %w", err)
	}
	return nil
}

// subtree returns user-UID.slice and the cgroups below it, deepest
// first.
func (c *cgroups) subtree() []string {
	var dirs []string
	_ = filepath.WalkDir(c.host(c.slice()), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	return dirs
}

func (c *cgroups) pids() []int {
	var pids []int
	for _, d := range c.subtree() {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// kill SIGKILLs every process in user-UID.slice until none is left and
// returns how many it killed. cgroup.kill (Linux 5.14) does it in one go,
// without racing against forks; the loop is for older kernels.
func (c *cgroups) kill() (int, error) {
	killed := len(c.pids())
	_ = os.WriteFile(c.host(filepath.Join(c.slice(), "cgroup.kill")), []byte("1"), 0)
	deadline := time.Now().Add(stopTimeout)
	for {
		pids := c.pids()
		if len(pids) == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("processes left in user-%d.slice after SIGKILL: %v", c.uid, pids)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// remove removes user-UID.slice with everything below it, and user.slice
// if nothing else is in it. A cgroup whose last process has just been
// killed can be busy for a moment, hence the retries.
func (c *cgroups) remove() error {
	deadline := time.Now().Add(stopTimeout)
	for _, d := range c.subtree() {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("removing cgroup %s: %w", d, err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	_ = syscall.Rmdir(c.host("user.slice")) // busy when in use by others: fine
	return nil
}

// sweep removes what a test binary that died without teardown left:
// processes of the test user and its cgroups. Only called with the
// machine lock held, when no other user manager of ours is running.
func (c *cgroups) sweep(uid int) (int, error) {
	n, err := c.kill()
	if err != nil {
		return n, err
	}
	deadline := time.Now().Add(stopTimeout)
	for pids := processesOf(uid); len(pids) > 0; pids = processesOf(uid) {
		if time.Now().After(deadline) {
			return n, fmt.Errorf("processes of uid %d left after SIGKILL: %v", uid, pids)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return n, c.remove()
}

// processesOf returns the live (not zombie) processes whose real uid is
// uid.
func processesOf(uid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		var ruid = -1
		zombie := false
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					ruid, _ = strconv.Atoi(f[0])
				}
			}
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				zombie = strings.HasPrefix(strings.TrimSpace(v), "Z")
			}
		}
		if ruid == uid && !zombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// traversableTempDir returns the temporary directory if every directory
// on its path can be entered by other users (the test user must reach
// its home and the binaries under it), else /tmp.
func traversableTempDir() string {
	dir := os.TempDir()
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == "/" {
			return dir
		}
	}
}

// BinDir returns a new empty directory, mode 0755, that the test user
// can reach (unlike t.TempDir, whose parents are 0700 root), for
// binaries and scripts the user manager is to run. It is removed when
// the test ends.
func BinDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(traversableTempDir(), "collie-bin-")
	if err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("systemdtest: %v", err)
	}
	return dir
}
