//go:build linux

package systemd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/systemdtest"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// The test binary, run as the test user inside systemdtest's namespace,
// asks the user manager itself: helperUnits names the units (comma
// separated), helperVia the way in ("bus" or "private").
const (
	helperUnits = "COLLIE_SYSTEMD_HELPER_UNITS"
	helperVia   = "COLLIE_SYSTEMD_HELPER_VIA"
)

func TestMain(m *testing.M) {
	if units := os.Getenv(helperUnits); units != "" {
		os.Exit(queryHelper(os.Stdout, os.Getenv(helperVia), strings.Split(units, ",")))
	}
	os.Exit(m.Run())
}

// answer is one unit as the helper saw it.
type answer struct {
	Unit Unit
	Err  string
}

// queryHelper connects by via and prints each unit's answer as JSON.
func queryHelper(w io.Writer, via string, units []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var m *UserManager
	var err error
	switch via {
	case "bus":
		m, err = connectSessionBus(ctx)
	case "private":
		m, err = connectPrivate(ctx, os.Getenv("XDG_RUNTIME_DIR"))
	default:
		m, err = ConnectUserManager(ctx, os.Getenv)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "connect (%s): %v\n", via, err)
		return 1
	}
	defer m.Close()
	answers := map[string]answer{}
	for _, name := range units {
		u, err := m.Unit(ctx, name)
		a := answer{Unit: u}
		if err != nil {
			a.Err = err.Error()
		}
		answers[name] = a
	}
	if err := json.NewEncoder(w).Encode(answers); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const demoUnit = `[Unit]
Description=collie systemd package test

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=default.target
`

// TestUserManager_L4: collie doctor's questions (package systemd's
// UserManager.Unit), asked of a real systemd --user as its user, over
// the session bus and over the manager's private socket, get the unit's
// states and file: an enabled running service, one that is not
// installed, and templates installed or not.
func TestUserManager_L4(t *testing.T) {
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	um.InstallUnit("collie-demo.service", demoUnit)
	um.InstallUnit("collie-demo@.service", demoUnit)
	if out, err := um.Systemctl(ctx, "enable", "--now", "collie-demo.service"); err != nil {
		t.Fatalf("systemctl --user enable --now collie-demo.service: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(systemdtest.BinDir(t), "systemd.test")
	copyFile(t, self, bin)

	units := []string{"collie-demo.service", "collie-absent.service", "collie-demo@.service", "collie-absent@.service"}
	check := func(t *testing.T, got map[string]answer) {
		for _, name := range units {
			if got[name].Err != "" {
				t.Errorf("%s: %s", name, got[name].Err)
			}
		}
		demo := got["collie-demo.service"].Unit
		if demo.Name != "collie-demo.service" || demo.Load != "loaded" || demo.Active != "active" || demo.Sub != "running" ||
			demo.FileState != "enabled" || !strings.HasSuffix(demo.Path, "/.config/systemd/user/collie-demo.service") {
			t.Errorf("collie-demo.service = %+v; want loaded, active, running, enabled, from ~/.config/systemd/user", demo)
		}
		if a := got["collie-absent.service"].Unit; a.Load != "not-found" || a.Active != "inactive" || a.Path != "" {
			t.Errorf("collie-absent.service = %+v; want not-found, inactive, no file", a)
		}
		if tmpl := got["collie-demo@.service"].Unit; !strings.HasSuffix(tmpl.Path, "/.config/systemd/user/collie-demo@.service") || tmpl.FileState == "" || tmpl.Load != "" {
			t.Errorf("collie-demo@.service = %+v; want its file and file state only", tmpl)
		}
		if a := got["collie-absent@.service"].Unit; a != (Unit{Name: "collie-absent@.service"}) {
			t.Errorf("collie-absent@.service = %+v; want only its name (not installed)", a)
		}
	}
	ask := func(t *testing.T, via string) {
		cmd := um.Command(ctx, bin)
		cmd.Env = append(cmd.Env, helperUnits+"="+strings.Join(units, ","), helperVia+"="+via)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("asking over %s as %s: %v\n%s", via, um.User, err, stderr.String())
		}
		var got map[string]answer
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("the helper's answer %q: %v", out, err)
		}
		check(t, got)
	}
	t.Run("private socket", func(t *testing.T) { ask(t, "private") })
	t.Run("session bus", func(t *testing.T) {
		if um.BusAddress == "" {
			testenv.Unavailable(t, "no session bus: package dbus-user-session is not installed")
		}
		ask(t, "bus")
	})
	t.Run("as doctor connects", func(t *testing.T) { ask(t, "") })
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestConnectUserManagerNoManager_L4: without XDG_RUNTIME_DIR, or with
// neither a session bus nor the manager's private socket, connecting
// fails with a reason that names what is missing.
func TestConnectUserManagerNoManager_L4(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"no XDG_RUNTIME_DIR", nil, "XDG_RUNTIME_DIR is not set"},
		{"no manager", map[string]string{"XDG_RUNTIME_DIR": empty}, "no session bus, and " + filepath.Join(empty, "systemd", "private") + ": "},
		{"dead session bus", map[string]string{"XDG_RUNTIME_DIR": empty, "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(empty, "bus")},
			"session bus: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DBUS_SESSION_BUS_ADDRESS", tc.env["DBUS_SESSION_BUS_ADDRESS"]) // godbus reads it too
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			m, err := ConnectUserManager(ctx, func(k string) string { return tc.env[k] })
			if err == nil {
				m.Close()
				t.Fatal("connected to a user manager that is not there")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q; want it to start %q", err, tc.want)
			}
		})
	}
}

// TestLingerNoLogind_L4: when logind cannot be asked (no system bus),
// Linger says so with an error rather than answering "not lingering".
func TestLingerNoLogind_L4(t *testing.T) {
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	linger, err := Linger(ctx, os.Getuid())
	if err == nil || linger {
		t.Errorf("Linger without a system bus = %v, %v; want false and an error", linger, err)
	}
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Linger waited for its deadline instead of failing at once: %v", err)
	}
}
