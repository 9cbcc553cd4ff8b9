//go:build linux

package agentclients

import (
	"bufio"
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The tests of this file run the real clients with the hook collie setup
// writes, the real collie and a real durable agent (collie-agent, built
// from this tree), all as the unprivileged user. The test answers the
// agent's questions over its socket, as a paired device's tap reaches it
// through the bridge; the agent's caller check is off for that (the e2e
// tests answer with it on).

var bins struct {
	sync.Once
	dir string
	err error
}

// collieBinaries builds collie, collie-agent and collie's hook program
// once into a folder the user can read, and returns it.
func collieBinaries(t *testing.T) string {
	t.Helper()
	bins.Do(func() {
		dir, err := os.MkdirTemp(traversableTempDir(), "collie-bin-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			bins.err = err
			return
		}
		bins.dir = dir
		for _, c := range []string{"collie", "collie-agent", "collie-hook"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "../../../cmd/"+c)
			if c == "collie-hook" {
				cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build builds it
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				bins.err = fmt.Errorf("building %s: %v\n%s", c, err, out)
				return
			}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return bins.dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// installCollie puts collie into the sandbox (Root/bin/collie), with its
// hook program beside it (Root/bin/collie-hook, which collie setup
// writes into the clients' settings), and returns collie's path. A test
// can remove or break either. Each is a hard link to the built binary
// where it can be: a copy written while a parallel test forks can be held
// open for writing in that child, and running it then fails with "text
// file busy".
func installCollie(t *testing.T, s *Sandbox) string {
	t.Helper()
	for _, name := range []string{"collie-hook", "collie"} {
		src := filepath.Join(collieBinaries(t), name)
		path := filepath.Join(s.Root, "bin", name)
		if err := s.MkdirAll(filepath.Dir(path)); err != nil {
			t.Fatal(err)
		}
		if os.Link(src, path) == nil {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(s.Root, "bin", "collie")
}

// hookProgram is the hook program installCollie put beside collie: what
// the hooks collie setup writes run, so what a row removes or breaks to
// see the client block the tool.
func hookProgram(collie string) string { return filepath.Join(filepath.Dir(collie), "collie-hook") }

// userAgent is collie-agent running as the sandbox's user.
type userAgent struct {
	cmd    *exec.Cmd
	sock   string
	hc     *http.Client
	exited chan struct{}
}

// startAgent starts collie-agent as the user with its socket in the
// sandbox, and waits until it serves.
func startAgent(t *testing.T, s *Sandbox) *userAgent {
	t.Helper()
	run := filepath.Join(s.Home, "run")
	if err := s.MkdirAll(filepath.Join(run, "desk")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(run, 0o700)
	os.Chmod(filepath.Join(run, "desk"), 0o700)
	cfg := filepath.Join(s.Home, "agent.toml")
	if err := s.WriteFile(cfg, []byte("title = \"Code\"\nCallerCheck = \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &userAgent{sock: filepath.Join(run, "desk", "code.sock"), exited: make(chan struct{})}
	a.cmd = exec.Command(filepath.Join(collieBinaries(t), "collie-agent"), "--name", "code", "--socket", a.sock, "--config", cfg)
	a.cmd.Env = []string{"HOME=" + s.Home, "PATH=/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(s.Home, "state")}
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(s.User.UID), Gid: uint32(s.User.GID), Groups: []uint32{}}, Pdeathsig: syscall.SIGKILL}
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	serving := make(chan struct{})
	var log bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), `msg="collie-agent serving"`) {
				once.Do(func() { close(serving) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	go func() { a.cmd.Wait(); close(a.exited) }()
	t.Cleanup(func() { a.stop() })
	select {
	case <-serving:
	case <-a.exited:
		t.Fatalf("collie-agent exited before it served")
	case <-time.After(30 * time.Second):
		t.Fatalf("collie-agent did not serve within 30s")
	}
	a.hc = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", a.sock)
	}}}
	return a
}

// stop kills the agent (SIGCONT first, should it be stopped).
func (a *userAgent) stop() {
	a.cmd.Process.Signal(syscall.SIGCONT)
	a.cmd.Process.Kill()
	<-a.exited
}

// question waits until a question is open and returns it.
func (a *userAgent) question(t *testing.T, within time.Duration) (wire.Question, string) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		resp, err := a.hc.Get("http://agent" + wire.SnapshotPath)
		if err != nil {
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		snap, _, err := wire.ParseSnapshot(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range snap.Spaces {
			for _, tab := range sp.Tabs {
				for _, c := range tab.Conversations {
					if len(c.Questions) > 0 {
						return c.Questions[0], c.ID
					}
				}
			}
		}
	}
	t.Fatalf("no question within %v", within)
	return wire.Question{}, ""
}

// answer answers q with opt and reason, as a paired device's tap does.
func (a *userAgent) answer(t *testing.T, q wire.Question, conv, opt, reason string) {
	t.Helper()
	b, _ := json.Marshal(wire.AnswerRequest{Header: wire.Header{RequestID: "ans-" + q.ID}, Conversation: conv, Question: q.ID,
		Revision: q.Revision, OptionIDs: []string{opt}, Reason: reason})
	req, _ := http.NewRequest("POST", "http://agent"+wire.AnswerPath, bytes.NewReader(b))
	req.Header.Set(wire.VersionHeader, "1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("answer: %s %s", resp.Status, body)
	}
}

// setup runs `collie setup CLIENT --no-mcp --timeout WAIT` as the user:
// the hook alone, what these tests are about.
func setup(t *testing.T, s *Sandbox, collie, client string, wait time.Duration) {
	t.Helper()
	res, err := s.Run(context.Background(), 30*time.Second, nil, nil, collie, "setup", client, "--no-mcp", "--timeout", wait.String())
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("collie setup %s: %v %v", client, err, res)
	}
	checkRunsHookProgram(t, collie, client, res)
}

// checkRunsHookProgram fails unless setup's change (its diff on stdout)
// has the client's hook run the hook program installed beside collie.
func checkRunsHookProgram(t *testing.T, collie, client string, res Result) {
	t.Helper()
	out := string(res.Stdout)
	if !strings.Contains(out, hookProgram(collie)) || !strings.Contains(out, ` --hook `+client) && !strings.Contains(out, `"--hook", "`+client+`"`) {
		t.Fatalf("collie setup %s did not write the hook program %s:\n%s", client, hookProgram(collie), res.Stdout)
	}
}

// setupClient is setup for c, with OpenCode's plugin and opencode.json
// in the project (collie setup --project): its user config follows
// XDG_CONFIG_HOME, which the rows against one bridge share.
func setupClient(t *testing.T, s *Sandbox, collie string, c Client, wait time.Duration) {
	t.Helper()
	if c != OpenCode {
		setup(t, s, collie, string(c), wait)
		return
	}
	res, err := s.Run(context.Background(), 30*time.Second, nil, nil, collie, "setup", string(c), "--project", s.Project, "--no-mcp", "--timeout", wait.String())
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("collie setup %s --project: %v %v", c, err, res)
	}
	checkRunsHookProgram(t, collie, string(c), res)
}

// Gemini CLI, as the characterization runs it: an explicit model (no
// router request), API-key auth, the workspace trusted, yolo mode (in the
// default mode -p does not offer the shell tool at all).
const geminiHookedModel = "gemini-2.5-pro"

// geminiBaseSettings is the settings.json collie setup gemini merges into.
var geminiBaseSettings = []byte(`{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "telemetry": {"enabled": false},
  "privacy": {"usageStatisticsEnabled": false},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true}
}
`)

func (s *Sandbox) runGeminiHooked(ctx context.Context, apiURL, mode string) (Result, error) {
	env := append([]string{"GEMINI_API_KEY=collie-test", "GOOGLE_GEMINI_BASE_URL=" + apiURL,
		"GEMINI_CLI_TRUST_WORKSPACE=true"}, Offline(apiURL)...)
	return s.Run(ctx, clientTimeout, nil, env, Path(Gemini), "-p", "make a mark", "--output-format", "json",
		"-m", geminiHookedModel, "--approval-mode", mode)
}

// codexBaseConfig is the config.toml collie setup codex appends to: the
// fake API as the provider "fake", update checks and analytics off.
func codexBaseConfig(apiURL string) string {
	return fmt.Sprintf(`model = "gpt-fake"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = %q
wire_api = "responses"
env_key = "FAKE_API_KEY"
`, apiURL+"/v1")
}

// runCodexHooked runs codex exec; mode "bypass" is
// --dangerously-bypass-approvals-and-sandbox, anything else -s mode.
func (s *Sandbox) runCodexHooked(ctx context.Context, apiURL, mode string) (Result, error) {
	args := []string{"exec", "--skip-git-repo-check"}
	if mode == "bypass" {
		args = append(args, "--dangerously-bypass-approvals-and-sandbox")
	} else {
		args = append(args, "-s", mode)
	}
	env := append([]string{"FAKE_API_KEY=sk-collie-test"}, Offline(apiURL)...)
	return s.Run(ctx, clientTimeout, nil, env, Path(Codex), append(args, "make a mark")...)
}
