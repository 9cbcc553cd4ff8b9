package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The agent runs as its own process here, built from this package. The
// test process both starts it and writes to it, which the caller check
// would refuse (the test is in the agent's cgroup), so these configs set
// CallerCheck = "off"; internal/suite/e2e runs the agent under systemd with the
// check on.

type liveAgent struct {
	cmd    *exec.Cmd
	cfg    string
	hc     *http.Client
	stderr *syncBuf
	exited chan struct{} // closed when the process has exited
}

// syncBuf is the agent's stderr: its log, which the tests wait on line by
// line rather than for a time.
type syncBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // closed at the next write
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote != nil {
		close(s.wrote)
		s.wrote = nil
	}
	return s.b.Write(p)
}

// next returns a channel closed at the next write. Take it before looking
// at String, so that no write falls between the look and the wait.
func (s *syncBuf) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.wrote == nil {
		s.wrote = make(chan struct{})
	}
	return s.wrote
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

func agentBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "collie-agent-bin-")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "collie-agent")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

func startLive(t *testing.T, config string) *liveAgent {
	t.Helper()
	dir, err := os.MkdirTemp("", "ca-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "desk", "t.sock")
	cfg := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &liveAgent{cfg: cfg, stderr: &syncBuf{}, exited: make(chan struct{})}
	a.cmd = exec.Command(agentBinary(t), "--name", "t", "--socket", sock, "--config", cfg)
	a.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir)
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { a.cmd.Wait(); close(a.exited) }()
	t.Cleanup(func() {
		a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-a.exited:
		case <-time.After(15 * time.Second):
			a.cmd.Process.Kill()
			t.Error("the agent did not stop on SIGTERM")
		}
	})
	a.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	// The agent says it serves once its socket listens; from then on a
	// connection waits in the socket's backlog until it is accepted.
	waitLog(t, a, `msg="collie-agent serving"`)
	resp, err := a.hc.Get("http://agent" + wire.HelloPath)
	if err != nil {
		t.Fatalf("the agent said it serves, but hello failed: %v\n%s", err, a.stderr)
	}
	resp.Body.Close()
	return a
}

func (a *liveAgent) post(t *testing.T, path string, v any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(v)
	resp, err := a.hc.Post("http://agent"+path, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (a *liveAgent) snapshot(t *testing.T) *wire.Snapshot {
	t.Helper()
	resp, err := a.hc.Get("http://agent" + wire.SnapshotPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s, _, err := wire.DecodeSnapshot(resp.Body, resp.ContentLength)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// toolItem waits until the last tool-call item of conversation cv is no
// longer running and returns it.
func (a *liveAgent) toolItem(t *testing.T, cv, name string, limit time.Duration) *wire.ToolCall {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		for _, c := range a.snapshot(t).Spaces[0].Tabs[0].Conversations {
			if c.ID != cv {
				continue
			}
			for i := len(c.Items) - 1; i >= 0; i-- {
				if tc := c.Items[i].Tool; tc != nil && tc.Name == name {
					if tc.Status != "running" {
						return tc
					}
					break
				}
			}
		}
	}
	t.Fatalf("the tool call %q in %q did not finish in %v\n%s", name, cv, limit, a.stderr)
	return nil
}

func procKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

const liveConfig = `title = "Ops"
CallerCheck = "off"

[[belt]]
id = "flood"
label = "Flood"
command = ["/bin/sh", "-c", "yes 'a line of build output, 0123456789' | head -c 104857600"]
timeout = "2m"

[[belt]]
id = "hang"
label = "Hang"
command = ["/bin/sh", "-c", "sleep 300 & echo started; sleep 300"]
timeout = "1s"

[[belt]]
id = "slow"
label = "Slow"
command = ["/bin/sleep", "300"]

[[starter]]
id = "env"
label = "Show the environment"
command = ["/usr/bin/env"]
env = ["PATH"]
`

func TestAgentCommands(t *testing.T) {
	a := startLive(t, liveConfig)
	pid := a.cmd.Process.Pid
	n := 0
	tap := func(action, conv string) (int, string) {
		n++
		return a.post(t, wire.ActionPath, wire.ActionRequest{Header: wire.Header{RequestID: fmt.Sprintf("tap-%d", n)}, Action: action, Conversation: conv})
	}

	t.Run("X4_100MB_output_capped_and_memory_flat", func(t *testing.T) {
		before := procKB(t, pid, "VmRSS")
		if status, body := tap("flood", ""); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		start := time.Now()
		tc := a.toolItem(t, "main", "Flood", 2*time.Minute)
		took := time.Since(start)
		peak, after := procKB(t, pid, "VmHWM"), procKB(t, pid, "VmRSS")
		if tc.Status != "done" || len(tc.Output) > 16384 || !strings.Contains(tc.Output, "not shown") || !strings.Contains(tc.Summary, "100 MiB of output") {
			t.Fatalf("tool call: status %s, %d bytes of output, summary %q", tc.Status, len(tc.Output), tc.Summary)
		}
		t.Logf("collie-agent streamed 100 MiB in %v: RSS %d KiB before, %d KiB after, peak (VmHWM) %d KiB", took.Round(time.Millisecond), before, after, peak)
		if peak > before+32<<10 {
			t.Fatalf("the agent's peak RSS %d KiB is more than 32 MiB over its %d KiB before the command", peak, before)
		}
	})
	t.Run("timeout_kills_the_process_group", func(t *testing.T) {
		if status, body := tap("hang", ""); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		pgid := startedPID(t, a, "hang")
		if status, body := tap("hang", ""); status != http.StatusConflict || !strings.Contains(body, wire.CodeBusy) {
			t.Fatalf("a second tap while it runs: %d %s", status, body)
		}
		tc := a.toolItem(t, "main", "Hang", 15*time.Second)
		if tc.Status != "failed" || !strings.Contains(tc.Summary, "stopped by its timeout") || !strings.Contains(tc.Output, "started") {
			t.Fatalf("%+v", tc)
		}
		deadline := time.Now().Add(5 * time.Second)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for ; syscall.Kill(-pgid, 0) == nil; <-tick.C {
			if time.Now().After(deadline) {
				t.Fatalf("process group %d survived the timeout by 5 s", pgid)
			}
		}
	})
	t.Run("abort_stops_the_command", func(t *testing.T) {
		if status, body := tap("slow", ""); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		startedPID(t, a, "slow")
		status, body := a.post(t, wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "abort-slow"}, Conversation: "main"})
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		if tc := a.toolItem(t, "main", "Slow", 10*time.Second); !strings.Contains(tc.Summary, "stopped from a paired device") {
			t.Fatalf("%+v", tc)
		}
	})
	t.Run("D2_starter_new_conversation_D8_env_allow_list", func(t *testing.T) {
		status, body := a.post(t, wire.StarterPath, wire.StarterRequest{Header: wire.Header{RequestID: "st-env"}, Starter: "env"})
		var rep wire.WriteReply
		if status != 200 || json.Unmarshal([]byte(body), &rep) != nil || rep.Conversation == "" {
			t.Fatalf("%d %s", status, body)
		}
		tc := a.toolItem(t, rep.Conversation, "Show the environment", 10*time.Second)
		if !strings.Contains(tc.Output, "PATH=") || !strings.Contains(tc.Output, "COLLIE_AGENT=t") || strings.Contains(tc.Output, "HOME=") || strings.Contains(tc.Output, "XDG_STATE_HOME") {
			t.Fatalf("D8: environment of a starter:\n%s", tc.Output)
		}
	})
	t.Run("bad_config_on_reload_refused_whole", func(t *testing.T) {
		five := liveConfig
		for i := range 2 {
			five += fmt.Sprintf("\n[[belt]]\nid = \"extra%d\"\nlabel = \"Extra\"\ncommand = [\"/bin/true\"]\n", i)
		}
		os.WriteFile(a.cfg, []byte(five), 0o600)
		a.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, a, "5 belt buttons; an agent shows at most 4")
		if s := a.snapshot(t); len(s.Belt) != 3 {
			t.Fatalf("the belt changed to %+v after a refused config", s.Belt)
		}
		rel := strings.Replace(liveConfig, `"/usr/bin/env"`, `"env"`, 1)
		os.WriteFile(a.cfg, []byte(rel), 0o600)
		a.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, a, `the command \"env\" is not an absolute path`)
		good := strings.Replace(liveConfig, `label = "Slow"`, `label = "Sleep"`, 1)
		os.WriteFile(a.cfg, []byte(good), 0o600)
		a.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, a, "config reloaded")
		if s := a.snapshot(t); s.Belt[2].Label != "Sleep" {
			t.Fatalf("the belt after a good reload: %+v", s.Belt)
		}
	})
}

// startedPID waits for the line the agent logs when it has started a
// command (the command is then among its runs) and returns its pid.
func startedPID(t *testing.T, a *liveAgent, id string) int {
	t.Helper()
	re := regexp.MustCompile(`msg="command started".*command=` + id + ` .*pid=(\d+)`)
	var m []string
	waitFor(t, a, "a start line for "+id, func(log string) bool {
		m = re.FindStringSubmatch(log)
		return m != nil
	})
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// waitLog waits until the agent's log holds want.
func waitLog(t *testing.T, a *liveAgent, want string) {
	t.Helper()
	waitFor(t, a, fmt.Sprintf("%q", want), func(log string) bool { return strings.Contains(log, want) })
}

// waitFor waits until ok holds for the agent's log, looking again at each
// write to it, and fails, naming what, if the agent exits first or 10 s
// pass.
func waitFor(t *testing.T, a *liveAgent, what string, ok func(log string) bool) {
	t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		wrote := a.stderr.next()
		if ok(a.stderr.String()) {
			return
		}
		select {
		case <-wrote:
		case <-a.exited:
			if ok(a.stderr.String()) {
				return
			}
			t.Fatalf("the agent exited (%v) before its log said %s:\n%s", a.cmd.ProcessState, what, a.stderr)
		case <-limit.C:
			t.Fatalf("the agent's log did not say %s in 10 s:\n%s", what, a.stderr)
		}
	}
}
