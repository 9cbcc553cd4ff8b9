//go:build linux

package agentclients

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sandbox is where one test runs clients: a HOME and a project folder
// owned by the user, under a world-traversable temporary directory
// removed when the test ends.
type Sandbox struct {
	User User
	Root string // holds Home and Project; owned by root, mode 0755
	// Home is the user's $HOME: the clients' settings, sessions and
	// trust files live under it.
	Home string
	// Project is the working directory clients run in.
	Project string
	// Env is added to every run's environment (after the base: PATH,
	// HOME, USER, LANG, and the settings that keep the clients offline).
	Env []string
	// Command, when set, makes the command that runs name as the user
	// with its environment (systemdtest.UserManager.Command); Run then
	// adds Env and a change to the project folder. When nil, Run starts
	// the client itself as User.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

// New returns a sandbox for the account UserName, creating the account
// when missing. It is testenv.Unavailable when not root.
func New(t testing.TB) *Sandbox {
	t.Helper()
	u := requireUser(t)
	return NewFor(t, u)
}

func requireUser(t testing.TB) User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := EnsureUser(ctx)
	if err != nil {
		t.Fatalf("agentclients: %v", err)
	}
	return u
}

// NewFor returns a sandbox for the account u (for instance systemdtest's
// user, with Command set to its manager's Command afterwards).
func NewFor(t testing.TB, u User) *Sandbox {
	t.Helper()
	root, err := os.MkdirTemp(traversableTempDir(), "collie-agents-")
	if err != nil {
		t.Fatalf("agentclients: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatalf("agentclients: %v", err)
	}
	s := &Sandbox{User: u, Root: root, Home: filepath.Join(root, "home"), Project: filepath.Join(root, "project")}
	for _, d := range []string{s.Home, s.Project} {
		if err := s.MkdirAll(d); err != nil {
			t.Fatalf("agentclients: %v", err)
		}
	}
	return s
}

// traversableTempDir returns the temporary directory if every directory
// on its path can be entered by other users, else /tmp.
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

// MkdirAll makes dir and its missing parents under Root, owned by the
// user, mode 0755.
func (s *Sandbox) MkdirAll(dir string) error {
	rel, err := filepath.Rel(s.Root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("making %s: not under the sandbox %s", dir, s.Root)
	}
	p := s.Root
	for _, part := range splitPath(rel) {
		p = filepath.Join(p, part)
		if err := os.Mkdir(p, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("making %s: %w", p, err)
		}
		if err := os.Lchown(p, s.User.UID, s.User.GID); err != nil {
			return fmt.Errorf("making %s: %w", p, err)
		}
	}
	return nil
}

func splitPath(rel string) []string {
	var parts []string
	for rel != "." && rel != "" {
		dir, file := filepath.Split(rel)
		parts = append([]string{file}, parts...)
		rel = filepath.Clean(dir)
		if dir == "" {
			break
		}
	}
	return parts
}

// WriteFile writes data to name (under Root) as a file owned by the
// user, making its folders; it writes a temporary file and renames it.
func (s *Sandbox) WriteFile(name string, data []byte, mode os.FileMode) error {
	if err := s.MkdirAll(filepath.Dir(name)); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".tmp-"+filepath.Base(name)+"-")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Chown(tmp.Name(), s.User.UID, s.User.GID); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// Result is how a run ended.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int // -1 when killed by a signal
	Elapsed        time.Duration
	TimedOut       bool // killed at the run's deadline
}

// String sums the result up for a test's failure message.
func (r Result) String() string {
	return fmt.Sprintf("exit %d after %v (timed out: %v)\nstdout:\n%s\nstderr:\n%s",
		r.ExitCode, r.Elapsed.Round(time.Millisecond), r.TimedOut, clip(r.Stdout), clip(r.Stderr))
}

func clip(b []byte) string {
	const max = 4000
	if len(b) > max {
		return string(b[:max/2]) + "\n…\n" + string(b[len(b)-max/2:])
	}
	return string(b)
}

// baseEnv is the environment every run starts from: a plain login's, and
// the switches that keep the clients off the network beyond the model
// API (no telemetry, no update checks, no error reports).
func (s *Sandbox) baseEnv() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + s.Home,
		"USER=" + s.User.Name,
		"LOGNAME=" + s.User.Name,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		// The clients keep their settings under these; spelled out so
		// that a caller's environment (systemdtest's) does not send them
		// elsewhere.
		"XDG_CONFIG_HOME=" + filepath.Join(s.Home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(s.Home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(s.Home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(s.Home, ".cache"),
		// Claude Code.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		// Gemini CLI.
		"GEMINI_TELEMETRY_ENABLED=false", "GEMINI_CLI_NO_RELAUNCH=true",
		// OpenCode.
		"OPENCODE_DISABLE_AUTOUPDATE=true", "OPENCODE_DISABLE_LSP_DOWNLOAD=true",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=true", "OPENCODE_DISABLE_MODELS_FETCH=true",
	}
}

// Offline returns the environment that sends every HTTP(S) request the
// client makes to anywhere but loopback through proxy (the fake model
// API, which records and refuses CONNECT): a test sees any attempt to
// reach the network.
func Offline(proxy string) []string {
	return []string{"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy,
		"http_proxy=" + proxy, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

// Run runs the command name with args as the user, in Project, with the
// base environment, s.Env and env, and stdin (may be nil) on its standard
// input. The run, and every process it leaves in its process group, is
// killed when timeout passes or ctx ends; its output is returned in any
// case. The error is only for a run that could not start.
func (s *Sandbox) Run(ctx context.Context, timeout time.Duration, stdin []byte, env []string, name string, args ...string) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fullEnv := append(append(s.baseEnv(), s.Env...), env...)
	var cmd *exec.Cmd
	if s.Command != nil {
		// The caller's command runs in its own place (a namespace); the
		// shell moves to the project folder first. The caller's
		// environment stays (XDG_RUNTIME_DIR, the bus) where the base
		// does not override it (HOME and the XDG folders are the
		// sandbox's; os/exec keeps the last of a repeated variable).
		argv := append([]string{"-c", `cd "$0" && exec "$@"`, s.Project, name}, args...)
		cmd = s.Command(ctx, "/bin/sh", argv...)
		cmd.Env = append(cmd.Env, fullEnv...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
		cmd.Dir = s.Project
		cmd.Env = fullEnv
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(s.User.UID), Gid: uint32(s.User.GID), Groups: []uint32{}},
		}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Cancel = func() error {
		// The whole group: clients start shells, hooks and servers.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = 3 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s as %s: %w", name, s.User.Name, err)
	}
	err := cmd.Wait()
	// Whatever the client left running in its group goes too.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Elapsed: time.Since(began),
		ExitCode: cmd.ProcessState.ExitCode(), TimedOut: errors.Is(ctx.Err(), context.DeadlineExceeded)}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return r, fmt.Errorf("running %s as %s: %w", name, s.User.Name, err)
	}
	return r, nil
}

// Process is a client started in the background (a server such as
// `opencode serve`). Stop kills it and its process group.
type Process struct {
	cmd    *exec.Cmd
	Stdout io.Reader // the client's standard output, to be read as it comes
	stderr bytes.Buffer
	done   chan struct{}
}

// Start starts name with args as the user, in Project, with the same
// environment as Run, and returns at once. It starts the process itself,
// as User, even when Command is set. Read Stdout (or it may block
// the client once the pipe fills); Stop ends it. t.Cleanup stops it too.
func (s *Sandbox) Start(t testing.TB, env []string, name string, args ...string) (*Process, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = s.Project
	cmd.Env = append(append(s.baseEnv(), s.Env...), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(s.User.UID), Gid: uint32(s.User.GID), Groups: []uint32{}},
		Setpgid:    true, Pdeathsig: syscall.SIGKILL,
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{cmd: cmd, Stdout: out, done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s as %s: %w", name, s.User.Name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Stop)
	return p, nil
}

// Stop kills the process group and waits for the process to end.
func (p *Process) Stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stderr returns what the process wrote on standard error; call it after
// Stop.
func (p *Process) Stderr() string { return p.stderr.String() }
