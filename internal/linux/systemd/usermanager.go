package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/godbus/dbus/v5"
)

// UserManager is the user's service manager (systemd --user), asked over
// D-Bus as systemctl --user would.
type UserManager struct{ c *sddbus.Conn }

// Unit is a unit as the user manager sees it.
type Unit struct {
	Name      string
	Load      string // LoadState: loaded, not-found, …
	Active    string // ActiveState: active, inactive, failed, …
	Sub       string // SubState: running, listening, dead, …
	FileState string // UnitFileState: enabled, disabled, static, …
	Path      string // FragmentPath: where the unit file is
}

// ConnectUserManager connects to the user's manager over the session bus,
// as systemctl --user would, or, without a session bus, over the
// manager's private socket ($XDG_RUNTIME_DIR/systemd/private). getenv is
// os.Getenv or a test's. Close the manager when done.
func ConnectUserManager(ctx context.Context, getenv func(string) string) (*UserManager, error) {
	run := getenv("XDG_RUNTIME_DIR")
	if run == "" {
		return nil, errors.New("XDG_RUNTIME_DIR is not set")
	}
	var busErr error
	// Only when there is a session bus: godbus would otherwise try to
	// autolaunch one.
	if getenv("DBUS_SESSION_BUS_ADDRESS") != "" || isSocket(filepath.Join(run, "bus")) {
		m, err := connectSessionBus(ctx)
		if err == nil {
			return m, nil
		}
		busErr = err
	}
	m, err := connectPrivate(ctx, run)
	if err != nil {
		if busErr != nil {
			return nil, fmt.Errorf("session bus: %v; %v", busErr, err)
		}
		return nil, fmt.Errorf("no session bus, and %v", err)
	}
	return m, nil
}

// connectSessionBus asks the manager over the user's session bus.
func connectSessionBus(ctx context.Context) (*UserManager, error) {
	c, err := sddbus.NewUserConnectionContext(ctx)
	if err != nil {
		return nil, err
	}
	return &UserManager{c: c}, nil
}

// connectPrivate asks the manager over its private socket under run
// ($XDG_RUNTIME_DIR), where systemctl --user goes without a session bus.
func connectPrivate(ctx context.Context, run string) (*UserManager, error) {
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
		return nil, fmt.Errorf("%s: %v", private, err)
	}
	return &UserManager{c: c}, nil
}

func isSocket(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// Close hangs up.
func (m *UserManager) Close() { m.c.Close() }

// Unit returns the state of the unit name. For a template (a name with
// "@."), which cannot be loaded, only Path and FileState are set, from
// its unit file; a template that is not installed has an empty Path.
func (m *UserManager) Unit(ctx context.Context, name string) (Unit, error) {
	if strings.Contains(name, "@.") {
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

// Linger asks logind (org.freedesktop.login1 on the system bus) whether
// uid lingers, that is whether its user manager runs while it is logged
// out. A user logind does not know is neither logged in nor lingering:
// (false, nil). err says logind could not be asked.
func Linger(ctx context.Context, uid int) (bool, error) {
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
