//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/runrecord"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// runRig is one `collie run` started by a test, with its environment: a
// runtime folder of its own (short: a socket path has a 108-byte limit)
// and no user manager, so the run falls back to what the machine allows.
type runRig struct {
	t      *testing.T
	run    string // $XDG_RUNTIME_DIR
	dir    string // the project folder, collie run's working folder
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // the child's stdout, line by line
	stderr bytes.Buffer
}

func newRunRig(t *testing.T) *runRig {
	t.Helper()
	run, err := os.MkdirTemp("", "cr-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	dir := filepath.Join(run, "home", "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &runRig{t: t, run: run, dir: dir}
}

// start starts collie run with args; the child's stdout comes in lines.
func (r *runRig) start(args ...string) {
	r.t.Helper()
	collie, err := exec.LookPath("collie") // the test binary, as testscript.Main installs it
	if err != nil {
		r.t.Fatal(err)
	}
	home := filepath.Join(r.run, "home")
	r.cmd = exec.Command(collie, append([]string{"run"}, args...)...)
	r.cmd.Dir = r.dir
	r.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_RUNTIME_DIR=" + r.run,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
	r.cmd.Stderr = &r.stderr
	// A child's child may hold the output after a failed test.
	r.cmd.WaitDelay = 5 * time.Second
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		r.t.Fatal(err)
	}
	out, err := r.cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.lines = make(chan string, 64)
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	r.t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
	})
}

// line returns the child's next line of output.
func (r *runRig) line() string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("the child's output ended; collie run said:\n%s", r.stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no output from the child within 30s; collie run said:\n%s", r.stderr.String())
	}
	return ""
}

// wait returns collie run's exit status.
func (r *runRig) wait() int {
	r.t.Helper()
	for range r.lines {
	}
	err := r.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	r.t.Fatal(err)
	return -1
}

// client talks to the run's socket from the test's process, which is
// outside the run: not its descendant, not in its cgroup.
func (r *runRig) client(sock string) *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func post(t *testing.T, hc *http.Client, path string, v any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest(http.MethodPost, "http://agent"+path, bytes.NewReader(b))
	req.Header.Set("Collie-Protocol", "1")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func snapshot(t *testing.T, hc *http.Client) wire.Snapshot {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://agent/v1/snapshot", nil)
	req.Header.Set("Collie-Protocol", "1")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s wire.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// toolScript stands in for a coding agent: its hook asks through collie
// ask (which finds the run's socket with no flag), and its Bash tool
// tries to answer the question over the socket with curl. Its stdin is
// the test's: the test says when to go on.
const toolScript = `
collie ask --yes-no "Deploy main?" > ask.out 2>&1 &
ask=$!
echo "socket $COLLIE_AGENT_SOCKET"
read q
code=$(curl -sS -o tool.json -w '%{http_code}' --unix-socket "$COLLIE_AGENT_SOCKET" -H 'Collie-Protocol: 1' \
  -d '{"requestId":"tool-1","conversation":"run","question":"'"$q"'","revision":1,"optionIds":["yes"]}' http://agent/v1/answer)
echo "tool $code $(cat tool.json)"
wait $ask
echo "ask $? $(cat ask.out)"
`

// TestRun_C2_ToolsCannotAnswer: under collie run, the coding agent's own
// tool (curl over the socket, as a Bash tool would) gets 403
// caller-refused and the question stays open; the test's process, outside
// the run, answers it; the run's conversation is titled with the client
// and the folder; the run is recorded for collie doctor while it runs.
func TestRun_C2_ToolsCannotAnswer(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Unavailable(t, "curl is not installed (.ci/deps installs it)")
	}
	for _, args := range [][]string{nil, {"--no-systemd"}} {
		t.Run(strings.Join(append([]string{"default"}, args...), " "), func(t *testing.T) {
			r := newRunRig(t)
			r.start(append(args, "--name", "t1", "--", "sh", "-c", toolScript)...)
			sock := strings.TrimPrefix(r.line(), "socket ")
			if want := filepath.Join(r.run, "desk", "t1.sock"); sock != want {
				t.Fatalf("COLLIE_AGENT_SOCKET is %q, want %q", sock, want)
			}
			hc := r.client(sock)
			// The question comes from collie ask, in the run's conversation.
			var q wire.Question
			var conv *wire.Conversation
			deadline := time.Now().Add(20 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for ; q.ID == "" && time.Now().Before(deadline); <-tick.C {
				s := snapshot(t, hc)
				conv = &s.Spaces[0].Tabs[0].Conversations[0]
				if len(conv.Questions) == 1 {
					q = conv.Questions[0]
				}
			}
			if q.ID == "" {
				t.Fatalf("no question within 20s; collie run said:\n%s", r.stderr.String())
			}
			if conv.ID != "run" || conv.Title != "sh in ~/proj" || conv.Closed {
				t.Fatalf("the run's conversation: %+v", conv)
			}
			recs, _, err := runrecord.List(runrecord.Dir(r.run))
			if err != nil || len(recs) != 1 || recs[0].Name != "t1" || recs[0].Command != "sh" || recs[0].PID != r.cmd.Process.Pid {
				t.Fatalf("run records %+v, %v", recs, err)
			}
			if recs[0].Protection == "" {
				t.Fatal("the record names no protection")
			}
			t.Logf("protection: %s", recs[0].Protection)

			io.WriteString(r.stdin, q.ID+"\n")
			tool := r.line()
			if !strings.HasPrefix(tool, "tool 403 ") || !strings.Contains(tool, `"caller-refused"`) {
				t.Fatalf("the tool's answer: %s", tool)
			}
			s := snapshot(t, hc)
			if qs := s.Spaces[0].Tabs[0].Conversations[0].Questions; len(qs) != 1 || qs[0].ID != q.ID {
				t.Fatalf("the question is not open after the tool's refused answer: %+v", qs)
			}
			code, body := post(t, hc, wire.AnswerPath, wire.AnswerRequest{Header: wire.Header{RequestID: "dev-1"}, Conversation: "run", Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
			if code != 200 {
				t.Fatalf("the answer from outside the run: %d %s", code, body)
			}
			if got := r.line(); !strings.HasPrefix(got, "ask 0") {
				t.Fatalf("collie ask: %s", got)
			}
			r.stdin.Close()
			if st := r.wait(); st != 0 {
				t.Fatalf("collie run exited %d; it said:\n%s", st, r.stderr.String())
			}
			if recs, _, _ := runrecord.List(runrecord.Dir(r.run)); len(recs) != 0 {
				t.Fatalf("records left after the run: %+v", recs)
			}
			if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the socket is left after the run: %v", err)
			}
			if !strings.Contains(r.stderr.String(), "daemon is not running") {
				t.Fatalf("collie run did not say the daemon is not running:\n%s", r.stderr.String())
			}
		})
	}
}

// TestRunExitStatus: collie run exits with its child's status, 128+N for
// a child that signal N ended.
func TestRunExitStatus(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	} {
		t.Run(tc.script, func(t *testing.T) {
			r := newRunRig(t)
			r.start("--", "sh", "-c", tc.script)
			if got := r.wait(); got != tc.want {
				t.Fatalf("exit status %d, want %d; collie run said:\n%s", got, tc.want, r.stderr.String())
			}
		})
	}
}

// TestRunSignalsReachTheChild: SIGTERM, SIGHUP and SIGINT sent to collie
// run (not from a terminal) reach the child, which decides when to exit.
func TestRunSignalsReachTheChild(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newRunRig(t)
			r.start("--", "sh", "-c", `trap 'echo got; exit 7' TERM HUP INT; echo ready; read x`)
			if l := r.line(); l != "ready" {
				t.Fatalf("child said %q", l)
			}
			r.cmd.Process.Signal(sig)
			if l := r.line(); l != "got" {
				t.Fatalf("child said %q after %v", l, sig)
			}
			if got := r.wait(); got != 7 {
				t.Fatalf("exit status %d, want 7; collie run said:\n%s", got, r.stderr.String())
			}
		})
	}
}

// TestRunPassesStdio: the child reads collie run's stdin and writes its
// stdout and stderr, untouched.
func TestRunPassesStdio(t *testing.T) {
	r := newRunRig(t)
	r.start("--", "sh", "-c", "cat; echo to-stderr >&2")
	io.WriteString(r.stdin, "hello\x00\xff world\n")
	r.stdin.Close()
	if l := r.line(); l != "hello\x00\xff world" {
		t.Fatalf("stdout %q", l)
	}
	if st := r.wait(); st != 0 || !strings.Contains(r.stderr.String(), "to-stderr\n") {
		t.Fatalf("exit %d, stderr:\n%s", st, r.stderr.String())
	}
}

// TestRunNameInUse: a second run of a name whose socket is live is
// refused with a sentence that says what to do, and the first goes on.
func TestRunNameInUse(t *testing.T) {
	first := newRunRig(t)
	first.start("--name", "dup", "--", "sh", "-c", "echo up; read x; exit 0")
	if l := first.line(); l != "up" {
		t.Fatal(l)
	}
	second := newRunRig(t)
	second.run = first.run
	second.start("--name", "dup", "--", "sh", "-c", "echo ran")
	if st := second.wait(); st != 1 || !strings.Contains(second.stderr.String(), "choose another --name") {
		t.Fatalf("second run: exit %d:\n%s", st, second.stderr.String())
	}
	first.stdin.Close()
	if st := first.wait(); st != 0 {
		t.Fatalf("first run: exit %d:\n%s", st, first.stderr.String())
	}
}

func TestDefaultRunName(t *testing.T) {
	for _, tc := range []struct{ cmd, dir, want string }{
		{"claude", "/home/u/src/app", "claude-app-42"},
		{"/usr/bin/Codex", "/home/u/My Project!", "codex-my-project-42"},
		{"./x", "/", "x-42"},
		{"..", "/home/u/.hidden", "hidden-42"},
		{strings.Repeat("a", 80), "/p", strings.Repeat("a", 24) + "-p-42"},
	} {
		got := defaultRunName(tc.cmd, tc.dir, 42)
		if got != tc.want {
			t.Errorf("defaultRunName(%q, %q) = %q, want %q", tc.cmd, tc.dir, got, tc.want)
		}
	}
}

// TestRunSandbox_C4: with --sandbox the command runs under bubblewrap and
// sees the runtime folder empty but for the run's socket (no user bus,
// no user manager, no bridge control socket, no other agent); its tool
// still gets 403 caller-refused on the run's socket; SIGTERM sent to
// collie run reaches the sandboxed command, not bwrap; the exit status
// is the command's.
func TestRun_C4_Sandbox(t *testing.T) {
	for _, p := range []string{"bwrap", "curl"} {
		if _, err := exec.LookPath(p); err != nil {
			testenv.Unavailablef(t, "%s is not installed (.ci/deps installs it)", p)
		}
	}
	r := newRunRig(t)
	for _, f := range []string{"bus", "other.sock"} {
		if err := os.WriteFile(filepath.Join(r.run, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.start("--sandbox", "--name", "sb", "--", "sh", "-c", `
echo "runtime $(cd "$XDG_RUNTIME_DIR" && echo *) desk $(cd "$XDG_RUNTIME_DIR/desk" && echo *)"
code=$(curl -sS -o tool.json -w '%{http_code}' --unix-socket "$COLLIE_AGENT_SOCKET" -H 'Collie-Protocol: 1' \
  -d '{"requestId":"tool-1","conversation":"run","question":"q1","revision":1,"optionIds":["yes"]}' http://agent/v1/answer)
echo "tool $code $(cat tool.json)"
trap 'echo got TERM; exit 7' TERM
echo ready
while :; do read x || break; done
exit 0`)
	if l := r.line(); l != "runtime desk desk sb.sock" {
		t.Fatalf("the sandboxed command sees: %s", l)
	}
	if l := r.line(); !strings.HasPrefix(l, "tool 403 ") || !strings.Contains(l, `"caller-refused"`) {
		t.Fatalf("the sandboxed tool's answer: %s", l)
	}
	if l := r.line(); l != "ready" {
		t.Fatal(l)
	}
	recs, _, _ := runrecord.List(runrecord.Dir(r.run))
	if len(recs) != 1 || !recs[0].Sandbox {
		t.Fatalf("the run's record: %+v", recs)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	if l := r.line(); l != "got TERM" {
		t.Fatalf("after SIGTERM the command said %q", l)
	}
	if st := r.wait(); st != 7 {
		t.Fatalf("exit status %d, want 7; collie run said:\n%s", st, r.stderr.String())
	}
}

// TestRunEnv: the child's environment names the run's agent where collie
// ask, its hooks and collie mcp look, replaces what a parent run set, and
// drops collie run's own socket activation.
func TestRunEnv(t *testing.T) {
	got := runEnv([]string{"PATH=/usr/bin", "COLLIE_AGENT=old", "COLLIE_AGENT_SOCKET=/old.sock", "COLLIE_RUN=old",
		"LISTEN_PID=1", "LISTEN_FDS=1", "LISTEN_FDNAMES=x", "HOME=/h"}, "new", "/r/desk/new.sock")
	want := "PATH=/usr/bin HOME=/h COLLIE_AGENT_SOCKET=/r/desk/new.sock COLLIE_AGENT=new COLLIE_RUN=new"
	if strings.Join(got, " ") != want {
		t.Fatalf("runEnv = %q, want %q", strings.Join(got, " "), want)
	}
}
