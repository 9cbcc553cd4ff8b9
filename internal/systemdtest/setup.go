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
	if len(cgroupRoots()) == 0 {
		return tl, "no cgroup2 or name=systemd cgroup hierarchy is mounted"
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
		out, err := exec.CommandContext(ctx, tl.useradd, "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
			"--comment", "collie systemdtest user", UserName).CombinedOutput()
		if err != nil {
			return account{}, fmt.Errorf("creating the test user: useradd: %v: %s", err, out)
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

// cgroupRoots returns the mount points of the cgroup hierarchies that
// systemd tracks processes in: the cgroup2 tree (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hybrid machines) and the name=systemd v1
// tree of hybrid and legacy machines. The v1 controller hierarchies
// (cpu, memory, pids, …) are not delegated to user managers by systemd
// either, and are left alone.
func cgroupRoots() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var roots []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		left, right, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		lf, rf := strings.Fields(left), strings.Fields(right)
		if len(lf) < 5 || len(rf) < 3 || lf[3] != "/" {
			continue
		}
		switch {
		case rf[0] == "cgroup2":
			roots = append(roots, lf[4])
		case rf[0] == "cgroup" && hasOption(rf[2], "name=systemd"):
			roots = append(roots, lf[4])
		}
	}
	return roots
}

func hasOption(opts, opt string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == opt {
			return true
		}
	}
	return false
}

// cgroups are the test user's cgroups, the same path in every hierarchy.
type cgroups struct {
	roots []string
	uid   int
}

func newCgroups(uid int) *cgroups { return &cgroups{roots: cgroupRoots(), uid: uid} }

func (c *cgroups) slice(root string) string {
	return filepath.Join(root, "user.slice", fmt.Sprintf("user-%d.slice", c.uid))
}

func (c *cgroups) service(root string) string {
	return filepath.Join(c.slice(root), fmt.Sprintf("user@%d.service", c.uid))
}

func (c *cgroups) procs(dir func(string) string) []string {
	var files []string
	for _, r := range c.roots {
		files = append(files, filepath.Join(dir(r), "cgroup.procs"))
	}
	return files
}

// managerProcs are the cgroup.procs files of user@UID.service.
func (c *cgroups) managerProcs() []string { return c.procs(c.service) }

// runProcs are the cgroup.procs files of the scope for Run's commands.
func (c *cgroups) runProcs() []string {
	return c.procs(func(r string) string { return filepath.Join(c.slice(r), runScope) })
}

// delegated are the files systemd chowns when it delegates a cgroup
// (Delegate=yes on user@.service); the manager needs them to create its
// sub-cgroups and move its services' processes into them.
var delegated = []string{".", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads", "tasks"}

// create makes user.slice/user-UID.slice/user@UID.service, delegated to
// the user, and the scope for Run's commands, in every hierarchy.
func (c *cgroups) create(uid, gid int) error {
	for _, r := range c.roots {
		svc := c.service(r)
		if err := os.MkdirAll(svc, 0o755); err != nil {
			return fmt.Errorf("creating cgroup: %w", err)
		}
		for _, name := range delegated {
			err := os.Chown(filepath.Join(svc, name), uid, gid)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("delegating cgroup: %w", err)
			}
		}
		if err := os.Mkdir(filepath.Join(c.slice(r), runScope), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup: %w", err)
		}
	}
	return nil
}

// subtree returns user-UID.slice and the cgroups below it in every
// hierarchy, deepest first.
func (c *cgroups) subtree() []string {
	var dirs []string
	for _, r := range c.roots {
		_ = filepath.WalkDir(c.slice(r), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	for i, j := 0, len(dirs)-1; i < j; i, j = i+1, j-1 {
		dirs[i], dirs[j] = dirs[j], dirs[i]
	}
	return dirs
}

func (c *cgroups) pids() []int {
	var pids []int
	seen := make(map[int]bool) // a process is in every hierarchy
	for _, d := range c.subtree() {
		data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// killFiles are the cgroup.kill files of user-UID.slice; only cgroup2
// (Linux 5.14 and later) has them, so some may never exist.
func (c *cgroups) killFiles() []string {
	var files []string
	for _, r := range c.roots {
		files = append(files, filepath.Join(c.slice(r), "cgroup.kill"))
	}
	return files
}

// kill SIGKILLs every process in user-UID.slice until none is left and
// returns how many it killed. cgroup.kill (cgroup2, Linux 5.14) does it
// in one go, without racing against forks; the v1 name=systemd tree has
// no such file, hence the loop.
func (c *cgroups) kill() (int, error) {
	killed := 0
	for _, r := range c.roots {
		_ = os.WriteFile(filepath.Join(c.slice(r), "cgroup.kill"), []byte("1"), 0)
	}
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
	for _, r := range c.roots {
		_ = syscall.Rmdir(filepath.Join(r, "user.slice")) // busy when in use by others: fine
	}
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
