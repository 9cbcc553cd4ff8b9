//go:build linux

package loginclient

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// buildCollie builds cmd/collie for the tests that run it as a process.
func buildCollie(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		testenv.Unavailable(t, "the go command is not on PATH, so collie cannot be built for the process tests")
	}
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir, "../../../cmd/collie").CombinedOutput()
	if err != nil {
		t.Fatalf("build collie: %v\n%s", err, out)
	}
	return filepath.Join(dir, "collie")
}

// hostWatch is a host user's HOME and XDG folders, each with what collie
// reads there for a human (config.toml, sources.json, the control socket
// listening), watched: any open of a file or folder in them, and any
// connection to the control socket, is counted.
type hostWatch struct {
	env      []string
	inotify  int
	dirs     map[int]string
	conns    atomic.Int32
	listener net.Listener
}

const envTokenSecret = "COLLIE-TOKEN-FROM-THE-HOST-0123456789abcdef0123456789"

func watchHost(t *testing.T) *hostWatch {
	t.Helper()
	root, err := os.MkdirTemp("", "host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	cfg, state, run := filepath.Join(home, ".config"), filepath.Join(home, ".local", "state"), filepath.Join(root, "run")
	for _, d := range []string{filepath.Join(cfg, "collie"), filepath.Join(state, "collie"), filepath.Join(run, "collie"), filepath.Join(run, "desk")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(cfg, "collie", "config.toml"), []byte("# host config\n"), 0o600)
	os.WriteFile(filepath.Join(cfg, "collie", "sources.json"), []byte(`{"agents":[]}`), 0o600)
	h := &hostWatch{dirs: map[int]string{}}
	h.listener, err = net.Listen("unix", filepath.Join(run, "collie", "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.listener.Close() })
	os.Chmod(filepath.Join(run, "collie", "control.sock"), 0o600)
	go func() {
		for {
			c, err := h.listener.Accept()
			if err != nil {
				return
			}
			h.conns.Add(1)
			c.Close()
		}
	}()
	h.inotify, err = unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		testenv.Unavailablef(t, "inotify is not available: %v", err)
	}
	t.Cleanup(func() { unix.Close(h.inotify) })
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			wd, err := unix.InotifyAddWatch(h.inotify, p, unix.IN_OPEN|unix.IN_ACCESS|unix.IN_MODIFY|unix.IN_CREATE|unix.IN_ATTRIB)
			if err != nil {
				t.Fatal(err)
			}
			h.dirs[wd] = p
		}
		return nil
	})
	h.env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + cfg, "XDG_STATE_HOME=" + state, "XDG_RUNTIME_DIR=" + run,
		"COLLIE_TOKEN=" + envTokenSecret, "COLLIE_TOKEN_NEXT=" + envTokenSecret, "COLLIE_AGENT=a", "COLLIE_AGENT_SOCKET=" + filepath.Join(run, "desk", "a.sock")}
	h.drain()
	return h
}

// drain returns what was touched since the last call.
func (h *hostWatch) drain() []string {
	var touched []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(h.inotify, buf)
		if err != nil || n <= 0 {
			break
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				name = strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+int(ev.Len)]), "\x00")
			}
			touched = append(touched, filepath.Join(h.dirs[int(ev.Wd)], name))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	if c := h.conns.Swap(0); c > 0 {
		touched = append(touched, "the control socket")
	}
	return touched
}

type result struct {
	code           int
	stdout, stderr string
}

func runCollie(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run collie: %v", err)
	}
	return result{code, out.String(), errb.String()}
}

func markerEnv(m map[string]string) []string {
	var env []string
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	return env
}

// TestCollieAgentEnvironment_R4_R6_R13 runs the built collie: in an agent
// environment, complete or not, it never opens anything in the host
// user's HOME or XDG folders, never connects to the control socket, never
// sends COLLIE_TOKEN*, and shows no credential; it runs with no HOME or
// XDG variable at all; 20 processes on an expired token make exactly one
// refresh; a human's collie still reads its own folders.
func TestCollieAgentEnvironment_R4_R6_R13(t *testing.T) {
	bin := buildCollie(t)
	env, transport := agentEnv(t)
	b := newBridge(t)
	b.argsFile = filepath.Join(transport, "args")
	markers := map[string]string{loginstore.MarkerTransportDir: env.TransportDir, loginstore.MarkerHome: env.Home, loginstore.MarkerAgentID: env.AgentID}
	host := watchHost(t)
	var outputs []string
	check := func(t *testing.T, r result, wantCode int, want string) {
		t.Helper()
		outputs = append(outputs, r.stdout, r.stderr)
		if r.code != wantCode || !strings.Contains(r.stdout+r.stderr, want) {
			t.Fatalf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.code, wantCode, want, r.stdout, r.stderr)
		}
		if touched := host.drain(); len(touched) > 0 {
			t.Fatalf("collie touched the host user's files: %v", touched)
		}
	}

	t.Run("whoami_without_session", func(t *testing.T) {
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "whoami"), 1, "collie login --url")
	})
	t.Run("ask_without_session", func(t *testing.T) {
		r := runCollie(t, bin, append(markerEnv(markers), host.env...), "ask", "--yes-no", "q")
		check(t, r, 5, "hint: run `collie login --url BASE` again")
		if strings.Contains(r.stderr, "cannot reach") {
			t.Fatalf("a missing session said as an unreachable bridge: %s", r.stderr)
		}
	})
	t.Run("login_with_no_HOME_or_XDG", func(t *testing.T) {
		writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
		check(t, runCollie(t, bin, markerEnv(markers), "login", "--url", b.url()), 0, "logged in: agent agent-7")
	})
	t.Run("login_refused_keeps_session", func(t *testing.T) {
		path, _ := loginstore.Path(env, Service)
		before, _ := os.ReadFile(path)
		writeEnvelope(t, transport, envelopeFor("collie", "GRANT-unknown", time.Now().Add(time.Minute)))
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "login", "--url", b.url()), 1, "consumed")
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("a refused login changed the session")
		}
	})
	t.Run("whoami", func(t *testing.T) {
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "whoami"), 0, "agent:           agent-7")
	})
	t.Run("human_commands_refused", func(t *testing.T) {
		for _, c := range [][]string{{"show"}, {"pair"}, {"durable", "list"}, {"doctor"}, {"devices"}} {
			check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), c...), 1, "the human's command")
		}
	})
	t.Run("ask_with_flags_for_a_local_agent", func(t *testing.T) {
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "ask", "--yes-no", "--agent", "a", "q"), 2, "goes to the bridge")
	})
	t.Run("twenty_processes_one_refresh", func(t *testing.T) {
		b.seed(env, time.Now().Add(-time.Minute))
		_, before, asksBefore := b.counts()
		var wg sync.WaitGroup
		results := make([]result, 20)
		for i := range results {
			wg.Go(func() {
				results[i] = runCollie(t, bin, append(markerEnv(markers), host.env...), "ask", "--yes-no", "deploy?")
			})
		}
		wg.Wait()
		for _, r := range results {
			check(t, r, 0, "yes")
		}
		_, after, asks := b.counts()
		if after-before != 1 || asks-asksBefore != 20 {
			t.Fatalf("%d refreshes and %d asks for 20 processes; want 1 and 20", after-before, asks-asksBefore)
		}
	})
	t.Run("hook_over_the_bridge", func(t *testing.T) {
		hook := exec.Command(bin, "ask", "--hook", "claude")
		hook.Env = append([]string{"PATH=/usr/bin:/bin"}, append(markerEnv(markers), host.env...)...)
		hook.Stdin = strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"},"session_id":"s","tool_use_id":"u1"}`)
		out, err := hook.Output()
		if err != nil {
			t.Fatal(err)
		}
		check(t, result{0, string(out), ""}, 0, `"permissionDecision":"allow"`)
	})
	t.Run("logout_bridge_down", func(t *testing.T) {
		down := newBridge(t)
		down.seed(env, time.Now().Add(time.Hour))
		down.srv.Close()
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "logout"), 0, "could not be told to revoke")
		check(t, runCollie(t, bin, append(markerEnv(markers), host.env...), "whoami"), 1, "collie login --url")
	})

	// Fail closed: every incomplete or invalid environment, for every kind
	// of command, exits 1 with the reason and touches nothing of the host.
	root := t.TempDir()
	noexec, folder, empty := filepath.Join(root, "noexec"), filepath.Join(root, "folder"), filepath.Join(root, "empty")
	os.MkdirAll(filepath.Join(folder, "raft"), 0o755)
	os.MkdirAll(noexec, 0o755)
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(noexec, "raft"), []byte("#!/bin/sh\n"), 0o644)
	pathDir := filepath.Join(root, "path")
	os.MkdirAll(pathDir, 0o755)
	os.WriteFile(filepath.Join(pathDir, "raft"), []byte("#!/bin/sh\necho '{}'\n"), 0o755)
	cases := map[string]map[string]string{}
	for _, k := range []string{loginstore.MarkerTransportDir, loginstore.MarkerHome, loginstore.MarkerAgentID} {
		missing, blank := map[string]string{}, map[string]string{}
		for kk, v := range markers {
			missing[kk], blank[kk] = v, v
		}
		delete(missing, k)
		blank[k] = ""
		cases[k+"_missing"], cases[k+"_empty"] = missing, blank
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for kk, vv := range markers {
			m[kk] = vv
		}
		m[k] = v
		return m
	}
	cases["id_dotdot"] = with(loginstore.MarkerAgentID, "../x")
	cases["id_dot"] = with(loginstore.MarkerAgentID, ".x")
	cases["id_129"] = with(loginstore.MarkerAgentID, "a"+strings.Repeat("b", 128))
	cases["raft_missing_only_on_PATH"] = with(loginstore.MarkerTransportDir, empty)
	cases["raft_not_executable"] = with(loginstore.MarkerTransportDir, noexec)
	cases["raft_a_folder"] = with(loginstore.MarkerTransportDir, folder)
	for name, m := range cases {
		t.Run("fail_closed_"+name, func(t *testing.T) {
			env := append(markerEnv(m), host.env...)
			env = append(env, "PATH="+pathDir+":/usr/bin:/bin")
			for _, args := range [][]string{{"whoami"}, {"login", "--url", b.url()}, {"logout"}, {"show"}, {"durable", "list"}} {
				check(t, runCollie(t, bin, env, args...), 1, "not a complete agent environment")
			}
			// ask: could not ask (5), never the human's agent socket.
			check(t, runCollie(t, bin, env, "ask", "--yes-no", "q"), 5, "not a complete agent environment")
			// Its Claude Code hook still prints a deny, exit 0: a failing
			// hook would let the tool call through.
			hook := exec.Command(bin, "ask", "--hook", "claude")
			hook.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
			hook.Stdin = strings.NewReader(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"},"session_id":"s","tool_use_id":"u"}`)
			out, err := hook.Output()
			check(t, result{0, string(out), ""}, 0, `"permissionDecision":"deny"`)
			if err != nil || !strings.Contains(string(out), "not a complete agent environment") {
				t.Fatalf("hook: %v %s", err, out)
			}
		})
	}

	b.noSecrets(t, outputs...)
	for _, o := range outputs {
		if strings.Contains(o, envTokenSecret) {
			t.Fatal("COLLIE_TOKEN appears in output")
		}
	}
	b.mu.Lock()
	for _, s := range b.askTokens {
		if s == envTokenSecret {
			t.Fatal("COLLIE_TOKEN was sent to the bridge")
		}
	}
	b.mu.Unlock()

	// The watch sees a human's collie: it opens the host's folders.
	t.Run("human_positive_control", func(t *testing.T) {
		r := runCollie(t, bin, host.env, "whoami")
		if r.code != 0 || !strings.Contains(r.stdout, "human") {
			t.Fatalf("human whoami: %+v", r)
		}
		for _, c := range []string{"login", "logout"} {
			r := runCollie(t, bin, host.env, c, "--url", b.url())
			if c == "logout" {
				r = runCollie(t, bin, host.env, c)
			}
			if r.code != 1 || !strings.Contains(r.stderr, "is for an AI agent") {
				t.Fatalf("human %s: %+v", c, r)
			}
		}
		host.drain()
		r = runCollie(t, bin, host.env, "durable", "list")
		if touched := host.drain(); len(touched) == 0 {
			t.Fatalf("the watch saw nothing of a human's collie durable list, so it proves nothing: %+v", r)
		}
	})
}
