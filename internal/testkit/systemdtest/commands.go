//go:build linux

package systemdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// baseEnv is what a login session of the user would have: pam_systemd
// sets XDG_RUNTIME_DIR, the XDG base directories are spelled out so that
// programs that do not apply the defaults themselves find the same
// places.
func (um *UserManager) baseEnv() []string {
	return []string{
		"HOME=" + um.Home,
		"USER=" + um.User,
		"LOGNAME=" + um.User,
		"SHELL=/bin/sh",
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"XDG_RUNTIME_DIR=" + um.RuntimeDir,
		"XDG_CONFIG_HOME=" + filepath.Join(um.Home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(um.Home, ".local/state"),
		"XDG_DATA_HOME=" + filepath.Join(um.Home, ".local/share"),
		"XDG_CACHE_HOME=" + filepath.Join(um.Home, ".cache"),
	}
}

// managerEnv is the manager's environment, which it passes on to the
// services it starts (dbus.socket adds DBUS_SESSION_BUS_ADDRESS itself).
func (um *UserManager) managerEnv() []string { return um.baseEnv() }

// Env returns the environment that Run, Systemctl and Command give user
// commands: HOME, USER, XDG_RUNTIME_DIR, the XDG base directories, PATH,
// and DBUS_SESSION_BUS_ADDRESS when there is a session bus.
func (um *UserManager) Env() []string {
	env := um.baseEnv()
	if um.BusAddress != "" {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS="+um.BusAddress)
	}
	return env
}

func rootEnv() []string {
	return []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
}

// nsCommand returns a command that runs argv inside the namespace, in
// the cgroup cg (an open directory), with wd as working directory
// (nsenter would otherwise leave it at the namespace's root). The process
// is created in the cgroup (clone3 with CLONE_INTO_CGROUP), so it is
// there before it runs anything; the manager reads its own cgroup at
// start-up.
func (um *UserManager) nsCommand(ctx context.Context, cg *os.File, wd string, argv []string) *exec.Cmd {
	args := []string{"--target", strconv.Itoa(um.holder.Process.Pid), "--mount", "--wd=" + wd, "--"}
	cmd := exec.CommandContext(ctx, um.tools.nsenter, append(args, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if cg != nil { // nil only for diagnostics after a failed Start
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
	}
	// A command that leaves a background child holding its stdout must
	// not hang the test.
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Command returns a command that runs name as the test user inside the
// namespace, with Env() as its environment and Home as its working
// directory. Add to cmd.Env, or set Stdin/Stdout, before starting it;
// cmd.Dir has no effect (the working directory is set inside the
// namespace). Processes still running at teardown are killed.
func (um *UserManager) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append([]string{um.tools.setpriv, "--reuid", strconv.Itoa(um.UID), "--regid", strconv.Itoa(um.GID), "--init-groups", "--", name}, args...)
	cmd := um.nsCommand(ctx, um.scopeCG, um.Home, argv)
	cmd.Env = um.Env()
	return cmd
}

// Run runs name as the test user inside the namespace (see Command) and
// returns its standard output. A failure's error includes its standard
// error.
func (um *UserManager) Run(ctx context.Context, name string, args ...string) (string, error) {
	return output(um.Command(ctx, name, args...), append([]string{name}, args...))
}

// RunRoot runs name as root inside the namespace, where it sees the
// test's /run/user, /run/systemd and journal, and returns its standard
// output.
func (um *UserManager) RunRoot(ctx context.Context, name string, args ...string) (string, error) {
	argv := append([]string{name}, args...)
	cmd := um.nsCommand(ctx, um.scopeCG, "/", argv)
	cmd.Env = rootEnv()
	return output(cmd, argv)
}

// Systemctl runs systemctl --user args... as the test user and returns
// its standard output (also when it fails, as is-active does for an
// inactive unit).
func (um *UserManager) Systemctl(ctx context.Context, args ...string) (string, error) {
	return um.Run(ctx, um.tools.systemctl, append([]string{"--user"}, args...)...)
}

// Journal runs journalctl --no-pager args... as root inside the
// namespace, so it reads the test's journal, user journals included:
//
//	um.Journal(ctx, "-o", "json", "_SYSTEMD_USER_UNIT=collie.service")
func (um *UserManager) Journal(ctx context.Context, args ...string) (string, error) {
	return um.RunRoot(ctx, um.tools.journalctl, append([]string{"--no-pager"}, args...)...)
}

// output runs cmd and returns its standard output; an error names the
// command as the caller gave it (argv), not the nsenter wrapping.
func output(cmd *exec.Cmd, argv []string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// InstallUnit writes ~/.config/systemd/user/NAME, owned by the user, and
// runs daemon-reload. It fails the test (the one given to Start) on
// error.
func (um *UserManager) InstallUnit(name, content string) {
	um.t.Helper()
	dir := filepath.Join(um.Home, ".config/systemd/user")
	if err := um.MkdirAll(dir); err != nil {
		um.t.Fatalf("systemdtest: %v", err)
	}
	if err := um.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		um.t.Fatalf("systemdtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := um.Systemctl(ctx, "daemon-reload"); err != nil {
		um.t.Fatalf("systemdtest: %v", err)
	}
}

// MkdirAll creates dir and any missing parents (mode 0700) owned by the
// user. dir is a host path (see Path).
func (um *UserManager) MkdirAll(dir string) error {
	dir = um.Path(dir)
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		if err := os.Chown(missing[i], um.UID, um.GID); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes a file owned by the user with the given mode,
// creating its directory as MkdirAll does.
func (um *UserManager) WriteFile(name string, data []byte, mode os.FileMode) error {
	if err := um.MkdirAll(filepath.Dir(name)); err != nil {
		return err
	}
	name = um.Path(name)
	if err := os.WriteFile(name, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(name, mode); err != nil { // WriteFile's mode is cut by the umask
		return err
	}
	return os.Chown(name, um.UID, um.GID)
}

// Path returns where the test process (on the host) finds path as the
// namespace sees it. Paths under the namespace's own mounts (/run/user,
// /run/systemd, /run/log, /var/log, /sys/fs/cgroup) are reached through
// /proc/PID/root of the namespace's holder process; all others, Home
// and BinDir among them, are the same on both sides and returned
// unchanged:
//
//	os.Stat(um.Path(um.RuntimeDir + "/desk/x.sock"))
func (um *UserManager) Path(path string) string {
	for _, m := range nsMounts {
		if path == m || strings.HasPrefix(path, m+"/") {
			return fmt.Sprintf("/proc/%d/root%s", um.holder.Process.Pid, path)
		}
	}
	return path
}

// ManagerPID returns the pid of systemd --user.
func (um *UserManager) ManagerPID() int { return um.manager.Process.Pid }
