package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/linux/systemd"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
)

// FromSystem returns the Env of the running user on this machine: the XDG
// paths from getenv, the user manager and logind over D-Bus (package
// systemd), journald's
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
	e.Systemd = func(ctx context.Context) (Systemd, error) {
		m, err := systemd.ConnectUserManager(ctx, getenv)
		if err != nil {
			return nil, err
		}
		return userManager{m}, nil
	}
	e.Logind = systemd.Linger
	e.Journald = func() error {
		if !journald.Running() {
			return errors.New("nothing listens at /run/systemd/journal/socket")
		}
		return nil
	}
	if e.PathsErr == nil {
		c := control.NewClient(e.Paths.Control())
		e.Daemon, e.Push, e.AgentSessions = c, c.PushStatus, c.AgentSessions
	}
	e.Dial = dialTCP
	e.Clients = ClientsFromSystem(getenv, exec.LookPath)
	e.Fetch = fetchHealthz
	e.AgentCheck = func(ctx context.Context, name string) (string, error) {
		if e.PathsErr == nil {
			// collie-agent --check-config refuses a file that does not
			// exist; the agent itself starts with its demo without one.
			path := filepath.Join(filepath.Dir(e.Paths.Config), "collie-agent", name+".toml")
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return fmt.Sprintf("there is no %s: collie-agent@%s shows its demo conversation and question (collie-agent(1))", path, name), nil
			}
		}
		return checkAgentConfig(ctx, self, name)
	}
	e.Probe = func(ctx context.Context, socket string) (string, error) {
		h, err := upstream.NewSocket(socket, e.UID).Hello(ctx)
		if err != nil {
			var u *upstream.Unreachable
			if errors.As(err, &u) {
				return "", probeError{u}
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

// userManager is Systemd over the user manager's D-Bus client.
type userManager struct{ m *systemd.UserManager }

func (u userManager) Close() { u.m.Close() }

func (u userManager) Unit(ctx context.Context, name string) (Unit, error) {
	unit, err := u.m.Unit(ctx, name)
	return Unit(unit), err
}

// probeError is an agent the probe could not reach: it reads as the
// bridge's reason, exactly, and unwraps to the cause (a *sockpath.Error
// carries the code doctor picks its fix by).
type probeError struct{ u *upstream.Unreachable }

func (p probeError) Error() string { return p.u.Reason }
func (p probeError) Unwrap() error { return p.u.Err }
