//go:build linux

package agentclients

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/devicetest"
)

// Bridge is the whole path a tool call takes to the user's phone, for a
// client run by a test: a real bridge (collie daemon) with its device API
// on loopback, a durable agent (collie-agent, its caller check on)
// attached to it with collie durable attach, and a device paired with
// collie pair --local, all running as the sandbox's user in the bridge
// sandbox's HOME and runtime folder. A test reads cards and taps answers
// through Device, as a paired phone does; a client reaches the agent
// through the environment Env returns.
type Bridge struct {
	S          *Sandbox
	Bin        string // holds collie and collie-agent
	RuntimeDir string // $XDG_RUNTIME_DIR of the bridge and the agent
	AgentName  string
	AgentSock  string
	Device     *devicetest.Device

	t      testing.TB
	daemon *Daemon
	agent  *Daemon
}

// StartBridge starts the daemon and the agent "code" in s as its user,
// with bin's collie and collie-agent, attaches the agent and pairs a
// device; the processes are stopped when the test ends.
func StartBridge(t testing.TB, s *Sandbox, bin string) *Bridge {
	t.Helper()
	b := &Bridge{S: s, Bin: bin, RuntimeDir: filepath.Join(s.Root, "run"), AgentName: "code", t: t}
	b.AgentSock = filepath.Join(b.RuntimeDir, "desk", b.AgentName+".sock")
	for _, d := range []string{filepath.Join(b.RuntimeDir, "desk"), filepath.Join(s.Home, ".local", "state")} {
		if err := s.MkdirAll(d); err != nil {
			t.Fatalf("agentclients: %v", err)
		}
	}
	// The runtime folder and the desk are the user's alone, as
	// /run/user/UID is (the bridge and collie ask refuse anything else).
	for _, d := range []string{b.RuntimeDir, filepath.Join(b.RuntimeDir, "desk")} {
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatalf("agentclients: %v", err)
		}
	}
	s.Env = append(s.Env, b.Env()...)
	cfg := filepath.Join(s.Home, ".config")
	for name, content := range map[string]string{
		filepath.Join(cfg, "collie", "config.toml"):     "[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\nwebpush = false\n",
		filepath.Join(cfg, "collie-agent", "code.toml"): "title = \"Code\"\n",
	} {
		if err := s.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatalf("agentclients: %v", err)
		}
	}
	b.daemon = b.startDaemon("collie daemon", "collie daemon started", nil, filepath.Join(bin, "collie"), "daemon")
	b.StartAgent()
	b.collie("durable", "attach", b.AgentName, "--socket", b.AgentSock)
	b.Device, _ = devicetest.Pair(t, b.collie("pair", "--local", "--json"), "agentclients phone")
	b.waitFor("the agent on the device API", func() bool {
		for _, a := range b.Device.State().Agents {
			if a.Name == b.AgentName && a.Snapshot != nil {
				return true
			}
		}
		return false
	})
	return b
}

// Env is the environment a client (and so its hook) needs to reach the
// bridge's agent and control socket: the runtime, config and state
// folders, and the agent's socket.
func (b *Bridge) Env() []string {
	return []string{"XDG_RUNTIME_DIR=" + b.RuntimeDir,
		"XDG_CONFIG_HOME=" + filepath.Join(b.S.Home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(b.S.Home, ".local", "state"),
		"COLLIE_AGENT_SOCKET=" + b.AgentSock}
}

// collie runs collie args as the user and returns its standard output; a
// failure fails the test.
func (b *Bridge) collie(args ...string) string {
	b.t.Helper()
	res, err := b.S.Run(context.Background(), time.Minute, nil, nil, filepath.Join(b.Bin, "collie"), args...)
	if err != nil || res.ExitCode != 0 {
		b.t.Fatalf("collie %s: %v %v", strings.Join(args, " "), err, res)
	}
	return string(res.Stdout)
}

// StartAgent starts the agent (again, after Agent().Kill: a restart) and
// waits until it serves. The agent starts in a cgroup of its own, as a
// systemd unit does, so that its caller check can tell it apart from the
// bridge (in a root cgroup it refuses every answer).
func (b *Bridge) StartAgent() {
	b.t.Helper()
	cg, err := newCgroup(b.t, "collie-agentclients-"+b.AgentName)
	if err != nil {
		b.t.Fatalf("agentclients: the agent's cgroup: %v", err)
	}
	b.agent = b.startDaemon("collie-agent", `msg="collie-agent serving"`, cg, filepath.Join(b.Bin, "collie-agent"),
		"--name", b.AgentName, "--socket", b.AgentSock)
}

// newCgroup makes a cgroup named name and a number under the root of the
// cgroup2 hierarchy, removed when the test ends (after the processes
// started in it, whose cleanups run first), and returns it open.
func newCgroup(t testing.TB, name string) (*os.File, error) {
	root, err := cgroup2Root()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, name+"-")
	if err != nil {
		return nil, fmt.Errorf("making a cgroup under %s: %w", root, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("opening the cgroup %s: %w", dir, err)
	}
	t.Cleanup(func() { f.Close(); os.Remove(dir) })
	return f, nil
}

// cgroup2Root is where the cgroup2 hierarchy is mounted
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid system).
func cgroup2Root() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("finding the cgroup2 mount: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE ...
		pre, post, ok := strings.Cut(line, " - ")
		if f, g := strings.Fields(pre), strings.Fields(post); ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" && f[3] == "/" {
			return f[4], nil
		}
	}
	return "", errors.New("no cgroup2 hierarchy is mounted")
}

// Agent is the agent process started last.
func (b *Bridge) Agent() *Daemon { return b.agent }

// Daemon is the bridge process.
func (b *Bridge) Daemon() *Daemon { return b.daemon }

// For returns the bridge as the test t sees it: its failures (a device
// call that gets no reply, a wait that times out) fail t. A subtest that
// shares its parent's bridge must use it through For.
func (b *Bridge) For(t testing.TB) *Bridge {
	c := *b
	c.t = t
	d := *b.Device
	d.T = t
	c.Device = &d
	return &c
}

// Cards returns the questions open on the device API.
func (b *Bridge) Cards() []devicetest.Card { return devicetest.Cards(b.Device.State()) }

// Card waits until a question whose title, rationale or detail holds key is open
// on the device API, and returns it; ok is false when done is closed
// first (the client ended: no card is coming). It fails the test after a
// minute.
func (b *Bridge) Card(key string, done <-chan struct{}) (card devicetest.Card, ok bool) {
	b.t.Helper()
	b.waitFor("a card about "+key+" on the device API", func() bool {
		for _, c := range b.Cards() {
			if strings.Contains(c.Title, key) || strings.Contains(c.Rationale, key) || strings.Contains(c.Detail, key) {
				card, ok = c, true
				return true
			}
		}
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	return card, ok
}

// waitFor polls ok every 20 ms until it holds, failing the test after a
// minute (a guard against a hang, not a budget).
func (b *Bridge) waitFor(what string, ok func() bool) {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out after a minute waiting for %s", what)
		}
		<-tick.C
	}
}

// Daemon is a long-running process of the bridge's (the bridge, the
// agent) started as the user.
type Daemon struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	log    strings.Builder
}

// startDaemon starts path args as the user with the sandbox's
// environment, in the cgroup cg when not nil, and waits until a line of
// its standard error holds ready.
func (b *Bridge) startDaemon(name, ready string, cg *os.File, path string, args ...string) *Daemon {
	b.t.Helper()
	d := &Daemon{name: name, exited: make(chan struct{})}
	d.cmd = exec.Command(path, args...)
	d.cmd.Dir = b.S.Home
	d.cmd.Env = append(b.S.baseEnv(), b.S.Env...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(b.S.User.UID), Gid: uint32(b.S.User.GID), Groups: []uint32{}},
		Setpgid:    true, Pdeathsig: syscall.SIGKILL,
	}
	if cg != nil {
		d.cmd.SysProcAttr.UseCgroupFD, d.cmd.SysProcAttr.CgroupFD = true, int(cg.Fd())
	}
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		b.t.Fatalf("agentclients: %v", err)
	}
	if err := d.cmd.Start(); err != nil {
		b.t.Fatalf("agentclients: starting %s as %s: %v", name, b.S.User.Name, err)
	}
	serving := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var once sync.Once
		for sc.Scan() {
			d.mu.Lock()
			d.log.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if strings.Contains(sc.Text(), ready) {
				once.Do(func() { close(serving) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { d.cmd.Wait(); close(d.exited) }()
	b.t.Cleanup(d.Kill)
	select {
	case <-serving:
	case <-d.exited:
		b.t.Fatalf("%s exited before it was ready:\n%s", name, d.Log())
	case <-time.After(time.Minute):
		b.t.Fatalf("%s was not ready within a minute:\n%s", name, d.Log())
	}
	return d
}

// Log is what the process wrote on standard error so far.
func (d *Daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Freeze stops the process (SIGSTOP), as a hung program is; Kill ends
// it whatever its state.
func (d *Daemon) Freeze() error {
	if err := d.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	return nil
}

// Kill kills the process (continued first, should it be stopped) and
// waits for it to end.
func (d *Daemon) Kill() {
	_ = d.cmd.Process.Signal(syscall.SIGCONT)
	if err := d.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return
	}
	<-d.exited
}
