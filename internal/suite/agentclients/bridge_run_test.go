//go:build linux

package agentclients

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// shellBypass is each client's mode that runs its shell tool unasked.
var shellBypass = map[Client]string{Claude: "bypassPermissions", Codex: "bypass", Gemini: "yolo"}

var e2eBin struct {
	sync.Once
	path string
	err  error
}

// e2eclient builds internal/suite/e2e/e2eclient (the stand-in for a program
// that speaks the agent protocol: here, the coding agent's own tool
// answering its question) next to collie, and returns its path.
func e2eclient(t *testing.T) string {
	t.Helper()
	dir := collieBinaries(t)
	e2eBin.Do(func() {
		e2eBin.path = filepath.Join(dir, "e2eclient")
		out, err := exec.Command("go", "build", "-o", e2eBin.path, "../e2e/e2eclient").CombinedOutput()
		if err != nil {
			e2eBin.err = fmt.Errorf("building e2eclient: %v\n%s", err, out)
		}
	})
	if e2eBin.err != nil {
		t.Fatal(e2eBin.err)
	}
	return e2eBin.path
}

// TestCollieRun_ToolCannotAnswer_C2 runs each real client under collie
// run, with the hook collie setup writes and the bridge's device API: the
// model first starts, with a tool call the device allows, a background
// process that waits for the next question and answers it yes over
// $COLLIE_AGENT_SOCKET (the socket collie run gives the client), then
// calls the shell tool. The tool's answer gets 403 caller-refused, the
// question stays open on the device, and the device's no blocks the
// call. The control rows run the same script without collie run, against
// the bridge's own agent: there the tool's answer is taken and the call
// runs with no tap, the gap collie run closes. OpenCode's rows gate its
// bash tool with collie's plugin in the project (collie setup opencode
// --project). The --sandbox rows run the same under collie run --sandbox
// (bubblewrap): the clients work in it unchanged, and the tool can no
// longer connect to the bridge's agent or control socket (see
// runSelfAnswer).
func TestCollieRun_ToolCannotAnswer_C2(t *testing.T) {
	bin := collieBinaries(t)
	e2e := e2eclient(t)
	var clients []Client
	for _, c := range []Client{Claude, Codex, Gemini, OpenCode} {
		if Installed(c) {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		Require(t, Claude)
	}
	b := StartBridge(t, New(t), bin)
	for _, c := range clients {
		for _, how := range []string{"run", "sandbox", "control"} {
			name := map[string]string{"run": " under collie run", "sandbox": " under collie run --sandbox",
				"control": " control: without collie run"}[how]
			t.Run(string(c)+name, func(t *testing.T) {
				t.Parallel()
				runSelfAnswer(t, b.For(t), c, e2e, how)
			})
		}
	}
}

// runSelfAnswer is one row of TestCollieRun_ToolCannotAnswer_C2: how is
// "run" (collie run), "sandbox" (collie run --sandbox) or "control"
// (without collie run, the bridge's own agent).
//
// The tool also tries to connect to the bridge's agent's socket, beside
// the run's in the runtime folder's desk, and to the bridge's control
// socket. Under collie run it reaches both (the doors --sandbox closes);
// under --sandbox neither is there. The run's own socket stays in the
// sandbox, since the client runs its hooks there too: the caller check
// is what refuses the tool's answer.
func runSelfAnswer(t *testing.T, b *Bridge, c Client, e2e string, how string) {
	underRun := how != "control"
	s := New(t)
	s.Env = append(s.Env, b.Env()...)
	collie := installCollie(t, s)
	mark := filepath.Join(s.Project, "MARK")
	out := filepath.Join(s.Home, "tool-answer")
	// The title the question about the shell call will have: the tool
	// finds its question by it.
	title := ask.HookClientNamed(string(c)).Label + ": Run: echo ran > " + mark
	spec, _ := json.Marshal(map[string]string{"title": title, "option": "yes"})
	control := filepath.Join(b.RuntimeDir, "collie", "control.sock")
	script := fmt.Sprintf("#!/bin/sh\n%s reach %s %s > %s.reach 2>&1\n%s answer - '%s' > %s.out 2> %s.err\necho $? > %s.tmp && mv %s.tmp %s.code\n",
		e2e, b.AgentSock, control, out, e2e, spec, out, out, out, out, out)
	attack := filepath.Join(s.Root, "answer-myself.sh")
	if err := s.WriteFile(attack, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	start := callFor(c, "shell", attack)
	// Forked twice, in a session of its own, and in it before the call
	// returns: started with a trailing "&", the answerer was now and
	// then gone before it wrote a line under Codex (under load; most
	// likely Codex ended the call's process group before setsid had left
	// it). setsid -w returns only once the session is made and the
	// answerer started in it. The answerer is reparented
	// to the nearest subreaper, which under collie run is the run's
	// agent: still its descendant, so the caller check still applies.
	startCmd := "setsid -w sh -c 'sh " + attack + " &' < /dev/null > /dev/null 2>&1"
	setCommand(start.turn.Call, c, startCmd)
	call := callFor(c, "shell", mark)
	api := fakemodel.Start([]fakemodel.Turn{start.turn, call.turn, fakemodel.Say("all done")})
	defer api.Close()
	prepareClient(t, s, c, api.URL)
	// A longer wait than the other rows': the tool's answer and the
	// checks after it happen while the question is open.
	setupClient(t, s, collie, c, 30*time.Second)

	argv, env := clientArgv(c, api.URL, shellBypass[c], "make a mark")
	agent := b.AgentName
	if underRun {
		agent = "run-" + string(c)
		run := []string{collie, "run", "--no-systemd", "--name", agent}
		if how == "sandbox" {
			agent = "box-" + string(c)
			run = append(run[:len(run)-1], agent, "--sandbox")
		}
		argv = append(append(run, "--"), argv...)
	}
	timeout := clientTimeout
	if c == OpenCode {
		timeout = ocRunTimeout
	}
	run := startClientWithin(t, s, timeout, argv, env)
	first, ok := b.Card(attack, run.done)
	if !ok {
		t.Fatalf("the client ended before the first card: %v", run.res)
	}
	if first.Agent != agent {
		t.Fatalf("the card is %q's, want %q's", first.Agent, agent)
	}
	if status := b.Device.Answer(first, "yes", "", nil); status != 200 {
		t.Fatalf("the tap yes on the first card: %d", status)
	}
	if !underRun {
		// The control: the tool answered its own question (nobody else
		// did: the device tapped only the first card) and the call ran. The
		// tool's own report may not come: a client that ends at once may
		// take its background processes with it.
		res := run.wait()
		if got, err := os.ReadFile(mark); err != nil || string(got) != "ran\n" {
			refused, _ := os.ReadFile(out + ".err")
			t.Fatalf("without collie run, the tool's own yes should have run the call: %v %q (the tool said %s)\n%v", err, got, refused, res)
		}
		return
	}
	code, ok := waitFile(out + ".code")
	if !ok {
		reached, _ := os.ReadFile(out + ".reach")
		t.Fatalf("the tool's answerer did not report within a minute (it reached: %q); the model got %+v\n%v",
			reached, lastResult(api, 1), run.wait())
	}
	answered, _ := os.ReadFile(out + ".out")
	refused, _ := os.ReadFile(out + ".err")
	if strings.TrimSpace(code) == "0" || !strings.Contains(string(refused), "answer: 403 caller-refused") {
		t.Fatalf("the tool's answer of its own question: status %s, %s%s", code, answered, refused)
	}
	reached, _ := os.ReadFile(out + ".reach")
	for _, sock := range []string{b.AgentSock, control} {
		line := sock + ": ok"
		if how == "sandbox" {
			line = sock + ": dial unix " + sock + ": connect: no such file or directory"
		}
		if !strings.Contains(string(reached), line+"\n") {
			t.Fatalf("the tool's connection to %s: got\n%s\nwant %q", sock, reached, line)
		}
	}
	// The question is still open on the device: the phone decides.
	var second bool
	for _, card := range b.Cards() {
		if card.Title == title && card.Agent == agent {
			second = true
			if status := b.Device.Answer(card, "no", "not on a Friday", nil); status != 200 {
				t.Fatalf("the tap no: %d", status)
			}
		}
	}
	if !second {
		t.Fatalf("after the refused answer the question %q is not open on the device: %+v", title, b.Cards())
	}
	res := run.wait()
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the call ran after the device's no\n%v", res)
	}
	loop := api.TurnRequests()
	if len(loop) < 3 {
		t.Fatalf("%d requests of the agent loop, want 3\n%v", len(loop), res)
	}
	// The request carries every result so far; the shell call's is last.
	if rs := loop[2].ToolResults(); len(rs) == 0 || !strings.Contains(rs[len(rs)-1].Content, deniedByTap) {
		t.Fatalf("tool results %+v, want the last containing %q", rs, deniedByTap)
	}
	if res.ExitCode != 0 && (c == Claude || c == OpenCode) {
		t.Fatalf("collie run -- %s: %v", c, res)
	}
}

// setCommand makes call run command with c's shell tool.
func setCommand(call *fakemodel.Call, c Client, command string) {
	key := "command"
	if c == Codex {
		key = "cmd"
	}
	call.Input = map[string]any{key: command}
	if c != Codex {
		call.Input["description"] = "start a helper"
	}
}

// waitFile waits until path exists and returns what it holds; ok is
// false after a minute without it. The file's writer is on its own (it
// outlives the client that started it), so the client's end is no
// reason to stop waiting.
func waitFile(path string) (content string, ok bool) {
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		if b, err := os.ReadFile(path); err == nil {
			return string(b), true
		}
		if time.Now().After(deadline) {
			return "", false
		}
	}
}

// TestBridge_RepeatedCallID_D9: the model API gives two different shell
// calls the same call id (a proxy or a local model server that numbers
// its calls from 0 in each reply does). The device allows the first; the
// second, another command, must be a card of its own, not the first
// call's yes: the device's no blocks it.
func TestBridge_RepeatedCallID_D9(t *testing.T) {
	var clients []Client
	for _, c := range []Client{Claude, Codex, Gemini} {
		if Installed(c) {
			clients = append(clients, c)
		}
	}
	if len(clients) == 0 {
		Require(t, Claude)
	}
	b := newBridge(t)
	for _, c := range clients {
		t.Run(string(c), func(t *testing.T) {
			t.Parallel()
			b := b.For(t)
			s := New(t)
			s.Env = append(s.Env, b.Env()...)
			collie := installCollie(t, s)
			first, mark := filepath.Join(s.Project, "FIRST"), filepath.Join(s.Project, "MARK")
			one, two := callFor(c, "shell", first), callFor(c, "shell", mark)
			setCommand(one.turn.Call, c, "echo ran > "+first)
			two.turn.Call.ID = one.turn.Call.ID
			api := fakemodel.Start([]fakemodel.Turn{one.turn, two.turn, fakemodel.Say("all done")})
			defer api.Close()
			prepareClient(t, s, c, api.URL)
			setup(t, s, collie, string(c), 30*time.Second)
			argv, env := clientArgv(c, api.URL, shellBypass[c], "make two marks")
			run := startClient(t, s, argv, env)
			card, ok := b.Card(first, run.done)
			if !ok {
				t.Fatalf("the client ended before the first card: %v", run.res)
			}
			if status := b.Device.Answer(card, "yes", "", nil); status != 200 {
				t.Fatalf("the tap yes: %d", status)
			}
			card, ok = b.Card(mark, run.done)
			if !ok {
				res := run.wait()
				_, err := os.Stat(mark)
				t.Fatalf("FAIL OPEN: no card for the second call (ran: %v); the model got %+v\n%v", err == nil, lastResult(api, 2), res)
			}
			if status := b.Device.Answer(card, "no", "not on a Friday", nil); status != 200 {
				t.Fatalf("the tap no: %d", status)
			}
			res := run.wait()
			if _, err := os.Stat(first); err != nil {
				t.Errorf("the first call did not run after the yes\n%v", res)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatalf("the second call ran after the no\n%v", res)
			}
			if c == Claude {
				// Claude Code 2.1.328 sends the model only the first of two
				// results with one id; its own record has the deny.
				out, err := ParseClaudeOutput(res.Stdout)
				if err != nil || len(out.PermissionDenials) != 1 || !strings.Contains(fmt.Sprint(out.PermissionDenials[0].ToolInput), mark) {
					t.Fatalf("permission_denials %+v (%v), want the second call", out.PermissionDenials, err)
				}
				return
			}
			if r := lastResult(api, 2); !strings.Contains(r, deniedByTap) {
				t.Fatalf("the second call's result %q, want %q", r, deniedByTap)
			}
		})
	}
}

// lastResult is the last tool result in the agent loop's request n, or "".
func lastResult(api *fakemodel.Server, n int) string {
	loop := api.TurnRequests()
	if len(loop) <= n {
		return ""
	}
	rs := loop[n].ToolResults()
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Content
}
