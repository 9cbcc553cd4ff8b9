package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// agentRig is collie-agent@demo, socket-activated by the units in systemd/
// under a real user manager, with the caller check on (the default), and
// e2eclient, the stand-in for other programs, built next to it.
type agentRig struct {
	t       *testing.T
	um      *systemdtest.UserManager
	bin     string
	sock    string // as the namespace sees it
	results string // a folder the test user writes reports to
	hc      *http.Client
}

// buildClient compiles the e2e client where the test user can run it.
func buildClient(t *testing.T, bin string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "e2eclient"), "./internal/suite/e2e/e2eclient")
	cmd.Dir = "../../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build e2eclient: %v\n%s", err, out)
	}
}

// startAgent installs the agent's units and config and enables its socket.
// config may use BIN and RESULTS, replaced by their folders.
func startAgent(t *testing.T, config string) *agentRig {
	t.Helper()
	bin := build(t)
	buildClient(t, bin)
	um := systemdtest.Start(t)
	r := &agentRig{t: t, um: um, bin: bin, sock: um.RuntimeDir + "/desk/demo.sock", results: filepath.Join(um.Home, "results")}
	if err := um.MkdirAll(r.results); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"collie-agent@.socket", "collie-agent@.service"} {
		um.InstallUnit(name, unit(t, name, bin))
	}
	config = strings.NewReplacer("BIN", bin, "RESULTS", r.results).Replace(config)
	if err := um.WriteFile(filepath.Join(um.Home, ".config/collie-agent/demo.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := um.Systemctl(ctx, "enable", "--now", "collie-agent@demo.socket"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The test process (root, on the host) reads through the namespace's
	// view of the socket; reads are open to anyone who reaches it.
	path := um.Path(r.sock)
	r.hc = &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	return r
}

func (r *agentRig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	r.t.Cleanup(cancel)
	return ctx
}

// client runs e2eclient as the test user, outside the agent's unit: an
// unrelated process of the same user.
func (r *agentRig) client(args ...string) (string, error) {
	return r.um.Run(r.ctx(), r.bin+"/e2eclient", args...)
}

func (r *agentRig) snapshot() *wire.Snapshot {
	r.t.Helper()
	resp, err := r.hc.Get("http://agent" + wire.SnapshotPath)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	s, _, err := wire.DecodeSnapshot(resp.Body, resp.ContentLength)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

func (r *agentRig) show(prop string) string {
	r.t.Helper()
	out, err := r.um.Systemctl(r.ctx(), "show", "-p", prop, "--value", "collie-agent@demo.service")
	if err != nil {
		r.t.Fatalf("%v\n%s", err, out)
	}
	return strings.TrimSpace(out)
}

// report waits for an e2eclient report file and reads it.
func (r *agentRig) report(name string) report {
	r.t.Helper()
	path := filepath.Join(r.results, name)
	waitFor(r.t, 30*time.Second, "the report "+name, func() bool {
		_, err := os.Stat(path)
		return err == nil
	})
	b, err := os.ReadFile(path)
	if err != nil {
		r.t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		r.t.Fatalf("%s: %v\n%s", name, err, b)
	}
	return rep
}

type report struct {
	PID    int                `json:"pid"`
	PPID   int                `json:"ppid"`
	Cgroup string             `json:"cgroup"`
	Reads  map[string]outcome `json:"reads"`
	Writes []struct {
		Path string `json:"path"`
		outcome
	} `json:"writes"`
}

type outcome struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// wantRefused checks that every write of C2 was refused with 403
// caller-refused and a reason containing why, while both reads worked.
func wantRefused(t *testing.T, rep report, why string) {
	t.Helper()
	if len(rep.Writes) != len(wire.Writes()) {
		t.Fatalf("%d writes tried, want all %d: %+v", len(rep.Writes), len(wire.Writes()), rep.Writes)
	}
	for _, w := range rep.Writes {
		if w.Status != http.StatusForbidden || w.Code != wire.CodeCallerRefused || !strings.Contains(w.Message, why) {
			t.Errorf("C2: %s from pid %d: %d %s %q; want 403 caller-refused saying %q", w.Path, rep.PID, w.Status, w.Code, w.Message, why)
		}
	}
	for name, o := range rep.Reads {
		if o.Status != 200 {
			t.Errorf("C2: reads stay open, but %s got %d %s", name, o.Status, o.Message)
		}
	}
	if len(rep.Reads) != 2 {
		t.Errorf("reads = %+v", rep.Reads)
	}
}

const callerConfig = `title = "Ops"

[question]
title = "Ship it?"
rationale = "A question for the attackers to try to answer."

[[belt]]
id = "slow"
label = "Slow"
command = ["/bin/sleep", "60"]

[[starter]]
id = "noop"
label = "Nothing"
command = ["/bin/true"]

[[starter]]
id = "attack-child"
label = "Attack as a child"
command = ["BIN/e2eclient", "writes", "-", "RESULTS/child.json"]

[[starter]]
id = "attack-double-fork"
label = "Attack double-forked"
command = ["BIN/e2eclient", "double-fork", "-", "RESULTS/grandchild.json"]
`

// TestCallerCheckAttacks is C2 under the real user manager, with the agent
// socket-activated as users run it: a process the agent started, a
// grandchild that double-forked and was re-parented to systemd --user (a
// subreaper), and a process moved into the agent's cgroup each try every
// write and get 403 caller-refused while their reads work; an unrelated
// process of the same user writes (C1).
func TestCallerCheckAttacks(t *testing.T) {
	r := startAgent(t, callerConfig)
	um := r.um

	// An unrelated process taps the starters: its writes are allowed (C1),
	// and the first connection starts the agent (L1).
	if out, err := r.client("tap", r.sock, "starter", "attack-child"); err != nil {
		t.Fatalf("C1: an unrelated process could not tap a starter: %v\n%s", err, out)
	}
	agentPID, _ := strconv.Atoi(r.show("MainPID"))
	agentCG := r.show("ControlGroup")
	if agentPID == 0 || !strings.HasSuffix(agentCG, "/collie-agent@demo.service") {
		t.Fatalf("agent pid %d cgroup %q", agentPID, agentCG)
	}

	t.Run("C2_process_the_agent_started", func(t *testing.T) {
		rep := r.report("child.json")
		if rep.PPID != agentPID {
			t.Fatalf("the attacker's parent is %d, not the agent %d", rep.PPID, agentPID)
		}
		wantRefused(t, rep, "one of the agent's descendants")
	})

	t.Run("C2_double_forked_grandchild_reparented_to_the_user_manager", func(t *testing.T) {
		if out, err := r.client("tap", r.sock, "starter", "attack-double-fork"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		rep := r.report("grandchild.json")
		if rep.PPID != um.ManagerPID() {
			t.Fatalf("the grandchild's parent is %d, not systemd --user (%d): it was not re-parented to the subreaper", rep.PPID, um.ManagerPID())
		}
		if rep.Cgroup != agentCG {
			t.Fatalf("the grandchild is in %q, not the agent's cgroup %q", rep.Cgroup, agentCG)
		}
		wantRefused(t, rep, "runs in the agent's own cgroup")
	})

	t.Run("C2_process_moved_into_the_agent_cgroup", func(t *testing.T) {
		out := filepath.Join(r.results, "moved.json")
		cmd := um.Command(r.ctx(), r.bin+"/e2eclient", "wait-writes", r.sock, out)
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		pid := strings.TrimSpace(line)
		// Root moves it, as the user could from inside its own delegated
		// tree (the run scope sits outside that tree here).
		if err := os.WriteFile(um.Path("/sys/fs/cgroup"+agentCG+"/cgroup.procs"), []byte(pid), 0); err != nil {
			t.Fatalf("move %s into %s: %v", pid, agentCG, err)
		}
		stdin.Write([]byte("go\n"))
		stdin.Close()
		go func() { bufio.NewReader(stdout).WriteTo(new(bytes.Buffer)) }()
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		rep := r.report("moved.json")
		if rep.Cgroup != agentCG {
			t.Fatalf("the moved process is in %q, not %q", rep.Cgroup, agentCG)
		}
		wantRefused(t, rep, "runs in the agent's own cgroup")
	})

	t.Run("C1_unrelated_process_of_the_same_user_can_write", func(t *testing.T) {
		out := filepath.Join(r.results, "unrelated.json")
		if o, err := r.client("writes", r.sock, out); err != nil {
			t.Fatalf("%v\n%s", err, o)
		}
		rep := r.report("unrelated.json")
		for _, w := range rep.Writes {
			if w.Status != 200 {
				t.Errorf("C1: %s from an unrelated process: %d %s %s", w.Path, w.Status, w.Code, w.Message)
			}
		}
		// Its answer went through: the question is decided.
		for _, cv := range r.snapshot().Spaces[0].Tabs[0].Conversations {
			if cv.ID == "main" && len(cv.Questions) != 0 {
				t.Errorf("the question is still open after the unrelated answer: %+v", cv.Questions)
			}
		}
	})

	// Each refusal is in the agent's journal with the caller's pid.
	e, err := um.WaitJournal(r.ctx(), func(e systemdtest.JournalEntry) bool {
		return strings.Contains(e["MESSAGE"], "write refused: caller check") && strings.Contains(e["REASON"], "own cgroup")
	}, "_SYSTEMD_USER_UNIT=collie-agent@demo.service")
	if err != nil {
		t.Fatal(err)
	}
	if e["PRIORITY"] != "4" || e["CALLER_PID"] == "" || e["ROUTE"] == "" {
		t.Errorf("L2: refusal entry = %v", e)
	}
	if s := r.show("ActiveState"); s != "active" {
		t.Errorf("the agent is %q after the attacks; it must keep serving", s)
	}
}

// asking runs collie ask (or another command) as the test user in the
// background and returns a function that waits for it.
func (r *agentRig) asking(stdin []byte, name string, args ...string) func() (string, int) {
	cmd := r.um.Command(r.ctx(), name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	return func() (string, int) {
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			r.t.Fatal(err)
		}
		return out.String(), 0
	}
}

// answer answers, from an unrelated process of the user (a stand-in for
// the paired device), the open question with the title spec names.
func (r *agentRig) answer(spec map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(spec)
	if out, err := r.client("answer", r.sock, string(b)); err != nil {
		r.t.Fatalf("answer %s: %v\n%s", b, err, out)
	}
}

const askConfig = `title = "Questions"

[always]
enabled = true
duration = "1h"

[[starter]]
id = "asker"
label = "A starter that asks"
command = ["BIN/collie", "ask", "--yes-no", "--json", "Asked by a starter?"]
`

// TestAskEndToEnd is collie ask under the real user manager: the four
// kinds (D1) answered by a process the agent did not start, the tool-call
// key asked once (D9), default-deny on timeout, the Claude Code hook with
// PreToolUse samples, and a question asked by the agent's own command
// (asking is open; answering is not).
func TestAskEndToEnd(t *testing.T) {
	r := startAgent(t, askConfig)
	collie := r.bin + "/collie"
	ask := func(args ...string) func() (string, int) {
		return r.asking(nil, collie, append([]string{"ask", "--agent", "demo"}, args...)...)
	}

	t.Run("D1_yes_no", func(t *testing.T) {
		wait := ask("--yes-no", "--rationale", "CI passed on 1a2b3c.", "Deploy main to staging?")
		r.answer(map[string]any{"title": "Deploy main to staging?", "option": "yes", "reason": "go ahead"})
		if out, code := wait(); code != 0 || out != "yes\nreason: go ahead\n" {
			t.Fatalf("exit %d, output %q", code, out)
		}
		wait = ask("--yes-no", "Drop the old table?")
		r.answer(map[string]any{"title": "Drop the old table?", "option": "no"})
		if out, code := wait(); code != 1 || out != "no\n" {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
	t.Run("D1_choice", func(t *testing.T) {
		wait := ask("--choice", "staging", "--choice", "production", "--title", "Where to deploy?")
		r.answer(map[string]any{"title": "Where to deploy?", "optionLabel": "production"})
		if out, code := wait(); code != 0 || out != "production\n" {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
	t.Run("D1_line_through_collie_agent_ask", func(t *testing.T) {
		wait := r.asking(nil, r.bin+"/collie-agent", "ask", "--agent", "demo", "--line", "Name of the release branch?")
		r.answer(map[string]any{"title": "Name of the release branch?", "text": "release/1.4"})
		if out, code := wait(); code != 0 || out != "release/1.4\n" {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
	t.Run("D1_form_json", func(t *testing.T) {
		wait := ask("--form", "version=Version", "--form", "notes=Release notes", "--json", "Release details")
		r.answer(map[string]any{"title": "Release details", "values": map[string]string{"version": "1.4.0", "notes": "Faster checkout"}})
		out, code := wait()
		var res struct {
			Status string            `json:"status"`
			Values map[string]string `json:"values"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "answered" || res.Values["version"] != "1.4.0" {
			t.Fatalf("exit %d, output %q", code, out)
		}
	})
	t.Run("D9_tool_call_key_asked_once", func(t *testing.T) {
		first := ask("--yes-no", "--json", "--tool-call", "deploy-77", "Deploy build 77?")
		second := ask("--yes-no", "--json", "--tool-call", "deploy-77", "Deploy build 77?")
		waitFor(t, loadGuard, "the question on the board", func() bool { return countKey(r.snapshot(), "deploy-77") == 1 })
		// No wait for the second asker: whichever of the two reaches the
		// agent later, before the answer or after it, must be told it got
		// the other's question (existing), as checked below.
		if n := countKey(r.snapshot(), "deploy-77"); n != 1 {
			t.Fatalf("D9: %d questions for one tool-call key", n)
		}
		r.answer(map[string]any{"title": "Deploy build 77?", "option": "yes"})
		type result struct {
			Question string `json:"question"`
			Answer   string `json:"answer"`
			Existing bool   `json:"existing"`
		}
		var got [2]result
		for i, wait := range []func() (string, int){first, second} {
			out, code := wait()
			if code != 0 || json.Unmarshal([]byte(out), &got[i]) != nil || got[i].Answer != "yes" {
				t.Fatalf("asker %d: exit %d %q", i+1, code, out)
			}
		}
		if got[0].Question != got[1].Question || got[0].Existing == got[1].Existing {
			t.Fatalf("D9: two asks with one key got %+v and %+v; want one question, the later ask told it exists", got[0], got[1])
		}
		out, code := ask("--yes-no", "--json", "--tool-call", "deploy-77", "Deploy build 77?")()
		if code != 0 || !strings.Contains(out, `"existing":true`) || !strings.Contains(out, `"answer":"yes"`) {
			t.Fatalf("D9: a third ask with the key: exit %d %q, want the existing decision at once", code, out)
		}
	})
	t.Run("default_deny_on_timeout", func(t *testing.T) {
		start := time.Now()
		out, code := ask("--yes-no", "--timeout", "2s", "Nobody will answer this?")()
		if code != 3 || !strings.HasPrefix(out, "no\n") || !strings.Contains(out, "denied by default") {
			t.Fatalf("exit %d, output %q", code, out)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("hook_claude_PreToolUse", func(t *testing.T) {
		sample := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join("../../agent/ask/testdata/claude", name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		hook := func(in []byte) func() (string, int) {
			return r.asking(in, collie, "ask", "--hook", "claude", "--agent", "demo", "--timeout", "60s")
		}
		decision := func(out string) (string, string) {
			var o struct {
				H struct {
					Event    string `json:"hookEventName"`
					Decision string `json:"permissionDecision"`
					Reason   string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal([]byte(out), &o); err != nil || o.H.Event != "PreToolUse" {
				t.Fatalf("hook output %q: %v", out, err)
			}
			return o.H.Decision, o.H.Reason
		}
		wait := hook(sample("bash_git_push.json"))
		r.answer(map[string]any{"title": "Claude Code: Run: git push origin main", "option": "no", "reason": "not before the review"})
		out, code := wait()
		if d, why := decision(out); code != 0 || d != "deny" || !strings.Contains(why, "not before the review") {
			t.Fatalf("exit %d: %s %q", code, d, why)
		}
		wait = hook(sample("webfetch.json"))
		r.answer(map[string]any{"title": "Claude Code: Fetch https://pkg.go.dev/net/http", "option": "yes", "always": true})
		if d, _ := decision(func() string { o, _ := wait(); return o }()); d != "allow" {
			t.Fatalf("allow: %s", d)
		}
		// D7: the grant lets the same fetch through unasked, revocably.
		again := bytes.Replace(sample("webfetch.json"), []byte("toolu_01Ab2Cd4Ef6Gh8Ij0Kl2Mn4O"), []byte("toolu_01NewCallSameUrl000000"), 1)
		out, _ = hook(again)()
		if d, why := decision(out); d != "allow" || !strings.Contains(why, "always-allow grant") {
			t.Fatalf("grant: %s %q", d, why)
		}
		if o, err := r.um.Run(r.ctx(), r.bin+"/collie-agent", "grants", "--agent", "demo", "--revoke-all"); err != nil || !strings.Contains(o, "revoked 1") {
			t.Fatalf("revoke: %v %q", err, o)
		}
		third := bytes.Replace(sample("webfetch.json"), []byte("toolu_01Ab2Cd4Ef6Gh8Ij0Kl2Mn4O"), []byte("toolu_01ThirdCallSameUrl0000"), 1)
		wait = hook(third)
		r.answer(map[string]any{"title": "Claude Code: Fetch https://pkg.go.dev/net/http", "option": "no"})
		if d, _ := decision(func() string { o, _ := wait(); return o }()); d != "deny" {
			t.Fatalf("after revoking, the fetch was not asked again: %s", d)
		}
	})
	t.Run("asking_open_to_the_agent's_own_command", func(t *testing.T) {
		out, err := r.client("tap", r.sock, "starter", "asker")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var rep wire.WriteReply
		json.Unmarshal([]byte(out), &rep)
		r.answer(map[string]any{"title": "Asked by a starter?", "option": "yes"})
		waitFor(t, loadGuard, "the starter's collie ask to print the answer", func() bool {
			for _, cv := range r.snapshot().Spaces[0].Tabs[0].Conversations {
				for _, it := range cv.Items {
					if cv.ID == rep.Conversation && it.Tool != nil && it.Tool.Status == "done" && strings.Contains(it.Tool.Output, `"answer":"yes"`) {
						return true
					}
				}
			}
			return false
		})
	})
}

func countKey(s *wire.Snapshot, key string) int {
	n := 0
	for _, cv := range s.Spaces[0].Tabs[0].Conversations {
		for _, q := range cv.Questions {
			if q.ToolCall == key {
				n++
			}
		}
	}
	return n
}
