package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/coreos/go-systemd/v22/journal"
	"github.com/godbus/dbus/v5"

	"github.com/collie-linux/collie/internal/config"
	"github.com/collie-linux/collie/internal/control"
	"github.com/collie-linux/collie/internal/upstream"
)

// FromSystem returns the Env of the running user on this machine: the XDG
// paths from getenv, the user manager and logind over D-Bus, journald's
// socket, and the daemon's control socket.
func FromSystem(getenv func(string) string, version string) *Env {
	e := &Env{UID: os.Getuid(), Version: version}
	e.Paths, e.PathsErr = config.FromEnv(getenv)
	e.User = strconv.Itoa(e.UID)
	if u, err := user.LookupId(e.User); err == nil {
		e.User = u.Username
	}
	self, err := os.Executable()
	if err != nil {
		self = "collie"
	}
	e.Self = Binary{Path: self, Version: version}
	e.Agent = func() (Binary, error) { return findAgent(self) }
	e.Systemd = func(ctx context.Context) (Systemd, error) { return connectUserManager(ctx, getenv) }
	e.Logind = lingerOverDBus
	e.Journald = func() error {
		if !journal.Enabled() {
			return errors.New("nothing listens at /run/systemd/journal/socket")
		}
		return nil
	}
	if e.PathsErr == nil {
		e.Daemon = control.NewClient(e.Paths.Control())
	}
	e.Dial = dialTCP
	e.AgentCheck = func(ctx context.Context, name string) (string, error) { return checkAgentConfig(ctx, self, name) }
	e.Probe = func(ctx context.Context, socket string) (string, error) {
		h, err := upstream.NewSocket(socket, e.UID).Hello(ctx)
		if err != nil {
			var u *upstream.Unreachable
			if errors.As(err, &u) {
				return "", errors.New(u.Reason)
			}
			return "", err
		}
		return h.Agent, nil
	}
	return e
}

// findAgent finds collie-agent beside collie, then on PATH, and asks its
// version.
func findAgent(self string) (Binary, error) {
	path := filepath.Join(filepath.Dir(self), "collie-agent")
	if _, err := os.Stat(path); err != nil {
		if path, err = exec.LookPath("collie-agent"); err != nil {
			return Binary{}, errors.New("not found beside collie or on PATH")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return Binary{}, fmt.Errorf("%s --version failed: %v", path, err)
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "collie-agent ")
	if !ok {
		return Binary{}, fmt.Errorf("%s --version said %q, not collie-agent VERSION", path, strings.TrimSpace(string(out)))
	}
	return Binary{Path: path, Version: v}, nil
}

// checkAgentConfig runs the agent's own check of its config, as
// collie-agent@NAME.service would load it at start.
func checkAgentConfig(ctx context.Context, self, name string) (string, error) {
	a, err := findAgent(self)
	if err != nil {
		return "", fmt.Errorf("collie-agent is %v, so its config cannot be checked", err)
	}
	var stdout, stderr strings.Builder
	cmd := exec.CommandContext(ctx, a.Path, "--check-config", "--name", name)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return strings.TrimSpace(stdout.String()), nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return "", errors.New(agentCheckOutput(stderr.String()))
	}
	return "", fmt.Errorf("%s --check-config --name %s failed: %v %s", a.Path, name, err, agentCheckOutput(stderr.String()))
}

// connectUserManager asks the user's systemd over the session bus, as
// systemctl --user would, or, without a session bus, over the manager's
// private socket ($XDG_RUNTIME_DIR/systemd/private).
func connectUserManager(ctx context.Context, getenv func(string) string) (Systemd, error) {
	run := getenv("XDG_RUNTIME_DIR")
	if run == "" {
		return nil, errors.New("XDG_RUNTIME_DIR is not set")
	}
	var busErr error
	// Only when there is a session bus: godbus would otherwise try to
	// autolaunch one.
	if getenv("DBUS_SESSION_BUS_ADDRESS") != "" || isSocket(filepath.Join(run, "bus")) {
		c, err := sddbus.NewUserConnectionContext(ctx)
		if err == nil {
			return &userManager{c: c}, nil
		}
		busErr = err
	}
	private := filepath.Join(run, "systemd", "private")
	c, err := sddbus.NewConnection(func() (*dbus.Conn, error) {
		conn, err := dbus.Dial("unix:path="+private, dbus.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	})
	if err != nil {
		if busErr != nil {
			return nil, fmt.Errorf("session bus: %v; %s: %v", busErr, private, err)
		}
		return nil, fmt.Errorf("no session bus, and %s: %v", private, err)
	}
	return &userManager{c: c}, nil
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// userManager is Systemd over go-systemd's D-Bus client.
type userManager struct{ c *sddbus.Conn }

func (m *userManager) Close() { m.c.Close() }

func (m *userManager) Unit(ctx context.Context, name string) (Unit, error) {
	if strings.Contains(name, "@.") {
		// A template is not a unit that can be loaded; ask for its file.
		files, err := m.c.ListUnitFilesByPatternsContext(ctx, nil, []string{name})
		if err != nil {
			return Unit{}, err
		}
		for _, f := range files {
			if filepath.Base(f.Path) == name {
				return Unit{Name: name, Path: f.Path, FileState: f.Type}, nil
			}
		}
		return Unit{Name: name}, nil
	}
	p, err := m.c.GetUnitPropertiesContext(ctx, name)
	if err != nil {
		return Unit{}, err
	}
	str := func(k string) string { s, _ := p[k].(string); return s }
	return Unit{
		Name: name, Load: str("LoadState"), Active: str("ActiveState"), Sub: str("SubState"),
		FileState: str("UnitFileState"), Path: str("FragmentPath"),
	}, nil
}

// lingerOverDBus asks logind (org.freedesktop.login1 on the system bus)
// whether uid lingers. A user logind does not know is neither logged in
// nor lingering.
func lingerOverDBus(ctx context.Context, uid int) (bool, error) {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return false, err
	}
	defer conn.Close()
	mgr := conn.Object("org.freedesktop.login1", "/org/freedesktop/login1")
	var path dbus.ObjectPath
	call := mgr.CallWithContext(ctx, "org.freedesktop.login1.Manager.GetUser", 0, uint32(uid))
	if call.Err != nil {
		var de *dbus.Error
		if errors.As(call.Err, &de) && de.Name == "org.freedesktop.login1.NoSuchUser" {
			return false, nil
		}
		return false, call.Err
	}
	if err := call.Store(&path); err != nil {
		return false, err
	}
	v, err := conn.Object("org.freedesktop.login1", path).GetProperty("org.freedesktop.login1.User.Linger")
	if err != nil {
		return false, err
	}
	linger, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("logind's Linger is %s, not a boolean", v.Signature())
	}
	return linger, nil
}
