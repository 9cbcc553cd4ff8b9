//go:build linux

package agentclients

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/testkit/devicetest"
	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// The tests of this file run each real client with the hook collie setup
// writes, end to end through the real bridge: the hook asks the durable
// agent (its caller check on), the bridge carries the question to the
// device API, and the test reads the card and taps the answer there, as
// a paired phone does. Rows that leave the bridge as they found it share
// one bridge and run in parallel (each with a sandbox, a script and a
// tool call of its own, told apart by the call's MARK path); a row that
// freezes, restarts or stops a part starts a bridge of its own.

// bridgeRow is one case of a real client gated by collie's hook through
// the bridge.
type bridgeRow struct {
	name string
	mode string // the client's permission or approval mode
	hook bool   // collie setup ran
	// tool is the call the model makes: "shell" (the client's shell tool
	// runs `echo ran > MARK`), "write" (its file tool writes MARK) or
	// "search" (Gemini's google_web_search for "collie MARK", which
	// asks the model API: the search ran when that request came).
	tool string
	// act is what happens once the card is on the device: "yes" or "no"
	// (a tap), "none" (nobody answers), "freeze" (the agent is stopped),
	// "restart" (the agent is killed and started again), "bridge-down"
	// (the bridge is killed); or, with no card to wait for, "missing"
	// (collie is not there), "crash" (collie dies of SIGKILL) and
	// "control" (no hook: nothing asks), "agent-down" (the agent is
	// killed before the client starts) and "frozen-before" (the agent is
	// stopped before the client starts), "unoffered" (the mode does not
	// offer the tool: no hook runs and no card comes).
	act       string
	wantRan   bool
	wantInRes string // in the tool result the model is sent next, when it did not run
	// orRes, when set, is a second reason the result may hold instead:
	// the hook's own deadline, which under load can come before the
	// agent's timeout answer reaches it (a deny all the same).
	orRes string
	// alone, for a mode's row, is what the mode does with the call when
	// no hook is set: "runs" or "refused" make a control row that holds
	// it, "" none (the bypass control covers the mode).
	alone string
}

// ownBridge reports whether the row breaks its bridge, so needs its own.
func (r bridgeRow) ownBridge() bool {
	switch r.act {
	case "freeze", "restart", "bridge-down", "agent-down", "frozen-before":
		return true
	}
	return false
}

// deniedByTap is the reason the model is told after a "no" with the note
// "not on a Friday".
const deniedByTap = "Denied by the user on a paired device through Collie: not on a Friday"

// bridgeRows are the rows every client runs: bypass is the client's mode
// that runs every tool unasked (the control's), modes its other modes
// with the tool each offers non-interactively, each with a control row
// (no hook) where alone says what the mode does by itself: where it runs
// the tool, the mode's "no" row would fail without the hook.
func bridgeRows(bypass string, modes []bridgeRow, missing string) []bridgeRow {
	rows := []bridgeRow{
		{name: "control: no hook, the tool runs unasked", mode: bypass, tool: "shell", act: "control", wantRan: true},
		{name: "yes runs it", mode: bypass, hook: true, tool: "shell", act: "yes", wantRan: true},
		{name: "no answer denies at the timeout", mode: bypass, hook: true, tool: "shell", act: "none",
			wantInRes: fmt.Sprintf("No answer from the user within %s; Collie denies by default", hookWait),
			orRes:     fmt.Sprintf("No decision within %s; Collie denies by default", hook.Deadline(hookWait))},
		{name: "agent down", mode: bypass, hook: true, tool: "shell", act: "agent-down", wantInRes: "cannot reach the agent"},
		{name: "agent frozen before asking", mode: bypass, hook: true, tool: "shell", act: "frozen-before", wantInRes: "Collie denies by default"},
		{name: "agent frozen after asking", mode: bypass, hook: true, tool: "shell", act: "freeze", wantInRes: "Collie denies by default"},
		{name: "agent restarted after asking", mode: bypass, hook: true, tool: "shell", act: "restart", wantInRes: "Collie could not ask (the agent closed the connection without answering"},
		{name: "bridge down after asking", mode: bypass, hook: true, tool: "shell", act: "bridge-down", wantInRes: "Collie denies by default"},
		{name: "collie missing", mode: bypass, hook: true, tool: "shell", act: "missing", wantInRes: missing},
		{name: "collie crashes", mode: bypass, hook: true, tool: "shell", act: "crash", wantInRes: missing},
	}
	for _, m := range modes {
		if m.alone != "" {
			rows = append(rows, bridgeRow{name: "control: no hook, " + m.mode + ", " + m.tool + " " + m.alone,
				mode: m.mode, tool: m.tool, act: "control", wantRan: m.alone == "runs"})
		}
		m.hook = true
		if m.act == "" {
			m.act, m.wantInRes = "no", deniedByTap
		}
		if m.name == "" {
			m.name = m.act + ", " + m.mode + ", " + m.tool
		}
		rows = append(rows, m)
	}
	return rows
}

// TestClaudeCode_Bridge_D1 runs the real Claude Code through the real
// bridge and device API in every permission mode (a Write in acceptEdits,
// which that mode lets through unasked; a Bash and a Write in plan mode).
func TestClaudeCode_Bridge_D1(t *testing.T) {
	Require(t, Claude)
	runBridgeRows(t, Claude, bridgeRows("bypassPermissions", []bridgeRow{
		{mode: "default", tool: "shell", alone: "refused"},
		{mode: "default", tool: "shell", act: "yes", wantRan: true},
		{mode: "acceptEdits", tool: "shell", alone: "runs"},
		{mode: "acceptEdits", tool: "write", alone: "runs"},
		{mode: "auto", tool: "shell", alone: "runs"},
		{mode: "bypassPermissions", tool: "shell"},
		{mode: "bypassPermissions", tool: "write", alone: "runs"},
		{mode: "dontAsk", tool: "shell", alone: "refused"},
		// Plan mode: the hook is asked first, and its deny is what the
		// model is told; a yes does not lift the mode's own refusal
		// (Bash goes to auto mode's server-side check, which the fake
		// API does not pass through; a Write is refused outright).
		{mode: "plan", tool: "shell", alone: "refused"},
		{mode: "plan", tool: "shell", act: "yes", wantInRes: "Auto mode is unavailable: its safety check does not run for this session, so Bash was not run"},
		{mode: "plan", tool: "write", alone: "refused"},
		{mode: "plan", tool: "write", act: "yes", wantInRes: "while in plan mode"},
	}, `blocking because onFailure is "block"`))
}

// TestCodex_Bridge_D1 runs the real Codex CLI (codex exec) through the
// real bridge and device API with each sandbox mode exec takes, and an
// approval policy (exec runs with "never" whatever it is told; 0.169's
// exec has no --full-auto).
func TestCodex_Bridge_D1(t *testing.T) {
	Require(t, Codex)
	runBridgeRows(t, Codex, bridgeRows("bypass", []bridgeRow{
		{mode: "bypass", tool: "shell"},
		{mode: "danger-full-access", tool: "shell", alone: "runs"},
		// Codex's sandbox cannot start here (its CODEX_HOME is under /tmp,
		// where it will not put its codex-linux-sandbox helper, and bwrap
		// then fails to run it), so workspace-write fails the command by
		// itself; the hook's deny still comes first.
		{mode: "workspace-write", tool: "shell", alone: "refused"},
		{mode: "read-only", tool: "shell", alone: "refused"},
		{mode: "on-request", tool: "shell", alone: "refused"},
	}, "blocked"))
}

// TestGemini_Bridge_D1 runs the real Gemini CLI through the real bridge
// and device API: yolo with its shell and file tools, auto_edit with the
// file tool it offers there (gemini -p offers the shell in yolo only),
// and the default mode, where gemini -p offers no tool it would confirm
// (the shell and file tools are "not found", and no hook runs) but does
// offer google_web_search, which runs unconfirmed and which the hook
// gates.
func TestGemini_Bridge_D1(t *testing.T) {
	Require(t, Gemini)
	runBridgeRows(t, Gemini, bridgeRows("yolo", []bridgeRow{
		{mode: "yolo", tool: "shell"},
		{mode: "yolo", tool: "write", alone: "runs"},
		{mode: "auto_edit", tool: "write", alone: "runs"},
		{mode: "default", tool: "shell", act: "unoffered", wantInRes: `Tool \"run_shell_command\" not found`, alone: "refused"},
		{mode: "default", tool: "write", act: "unoffered", wantInRes: `Tool \"write_file\" not found`, alone: "refused"},
		{mode: "default", tool: "search", alone: "runs"},
		{mode: "default", tool: "search", act: "yes", wantRan: true},
	}, "Tool execution blocked"))
}

// runBridgeRows runs rows with the client c: the sharing rows in
// parallel on one bridge, the others each on a bridge of their own.
func runBridgeRows(t *testing.T, c Client, rows []bridgeRow) {
	var shared *Bridge
	for _, tc := range rows {
		if !tc.ownBridge() && shared == nil {
			shared = newBridge(t)
		}
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b *Bridge
			if tc.ownBridge() {
				b = newBridge(t)
			} else {
				b = shared.For(t)
			}
			runBridgeRow(t, b, c, tc)
		})
	}
}

// newBridge starts a bridge in a sandbox of its own.
func newBridge(t *testing.T) *Bridge {
	t.Helper()
	return StartBridge(t, New(t), collieBinaries(t))
}

// callSeq makes every tool call's id unique across the rows that share an
// agent: the agent keys a decision by the call (D9), and two rows' calls
// with one id would share it.
var callSeq atomic.Int64

// toolCall is the model's call of the row's tool on mark, and what the
// card must say of it.
type toolCall struct {
	turn    fakemodel.Turn
	title   string // in the card's title
	input   string // in the card's rationale
	content string // what the tool leaves in mark when it runs
}

// callFor returns the call of tool ("shell" or "write") with c on mark.
func callFor(c Client, tool, mark string) toolCall {
	n := callSeq.Add(1)
	id := map[Client]string{Claude: "toolu_", Codex: "call_", Gemini: "gem_", OpenCode: "toolu_"}[c] + fmt.Sprintf("bridge%d_%d", n, time.Now().UnixNano())
	if tool == "search" { // Gemini's google_web_search: a request to the model API
		query := "collie " + mark
		return toolCall{turn: fakemodel.Turn{Call: &fakemodel.Call{Name: "google_web_search", ID: id,
			Input: map[string]any{"query": query}}}, title: "Search the web for " + query}
	}
	if tool == "write" {
		content := fmt.Sprintf("written by call %d\n", n)
		name := map[Client]string{Claude: "Write", Gemini: "write_file"}[c]
		return toolCall{turn: fakemodel.Turn{Call: &fakemodel.Call{Name: name, ID: id,
			Input: map[string]any{"file_path": mark, "content": content}}},
			title: "Write " + mark, input: strings.TrimSpace(content), content: content}
	}
	command := "echo ran > " + mark
	t := callTurn(c, command)
	t.Call.ID = id
	return toolCall{turn: t, title: "Run: echo ran >", input: command, content: "ran\n"}
}

// prepareClient writes what the client needs before collie setup: Codex's
// provider and Gemini's auth, in the sandbox's HOME; OpenCode's provider
// in the project's opencode.json (the bridge's XDG_CONFIG_HOME, which
// OpenCode's user config follows, is shared by the rows).
func prepareClient(t *testing.T, s *Sandbox, c Client, apiURL string) {
	t.Helper()
	switch c {
	case OpenCode:
		if err := s.WriteFile(filepath.Join(s.Project, "opencode.json"), OpenCodeConfig(apiURL, nil), 0o644); err != nil {
			t.Fatal(err)
		}
	case Gemini:
		if err := s.WriteFile(filepath.Join(s.Home, ".gemini", "settings.json"), geminiBaseSettings, 0o644); err != nil {
			t.Fatal(err)
		}
	case Codex:
		s.Env = append(s.Env, "CODEX_HOME="+filepath.Join(s.Home, ".codex"))
		if err := s.WriteFile(filepath.Join(s.Home, ".codex", "config.toml"), []byte(codexBaseConfig(apiURL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// clientArgv is the command line that runs c once, non-interactively,
// in mode, and the environment it needs on top of the sandbox's.
func clientArgv(c Client, apiURL, mode, prompt string) (argv, env []string) {
	switch c {
	case Gemini:
		return []string{Path(Gemini), "-p", prompt, "--output-format", "json", "-m", geminiHookedModel, "--approval-mode", mode},
			append([]string{"GEMINI_API_KEY=collie-test", "GOOGLE_GEMINI_BASE_URL=" + apiURL, "GEMINI_CLI_TRUST_WORKSPACE=true"}, Offline(apiURL)...)
	case Codex:
		argv = []string{Path(Codex), "exec", "--skip-git-repo-check"}
		switch mode {
		case "bypass":
			argv = append(argv, "--dangerously-bypass-approvals-and-sandbox")
		case "on-request":
			// Asked for, and overruled by exec (which never asks).
			argv = append(argv, "-s", "workspace-write", "-c", `approval_policy="on-request"`)
		default:
			argv = append(argv, "-s", mode)
		}
		return append(argv, prompt), append([]string{"FAKE_API_KEY=sk-collie-test"}, Offline(apiURL)...)
	case OpenCode:
		argv = []string{Path(OpenCode), "run"}
		if mode == "yolo" {
			argv = append(argv, "--dangerously-skip-permissions")
		}
		return append(argv, prompt), Offline(apiURL)
	}
	return []string{Path(Claude), "-p", prompt, "--output-format", "json", "--permission-mode", mode}, ClaudeEnv(apiURL)
}

// clientRun is a client running in the background.
type clientRun struct {
	done  chan struct{}
	res   Result
	began time.Time
}

// startClient runs argv (with env) as the sandbox's user in the
// background.
func startClient(t *testing.T, s *Sandbox, argv, env []string) *clientRun {
	return startClientWithin(t, s, clientTimeout, argv, env)
}

// startClientWithin is startClient with the run bounded by timeout.
func startClientWithin(t *testing.T, s *Sandbox, timeout time.Duration, argv, env []string) *clientRun {
	r := &clientRun{done: make(chan struct{}), began: time.Now()}
	go func() {
		defer close(r.done)
		res, err := s.Run(context.Background(), timeout, nil, env, argv[0], argv[1:]...)
		if err != nil {
			t.Error(err)
		}
		r.res = res
	}()
	return r
}

func (r *clientRun) wait() Result { <-r.done; return r.res }

// runBridgeRow runs one row with the client c against the bridge b.
func runBridgeRow(t *testing.T, b *Bridge, c Client, tc bridgeRow) {
	s := New(t)
	s.Env = append(s.Env, b.Env()...)
	collie := installCollie(t, s)
	mark := filepath.Join(s.Project, "MARK")
	call := callFor(c, tc.tool, mark)
	api := fakemodel.Start([]fakemodel.Turn{call.turn, fakemodel.Say("all done")})
	defer api.Close()
	prepareClient(t, s, c, api.URL)
	if tc.hook {
		setup(t, s, collie, string(c), hookWait)
	}
	switch tc.act {
	case "missing":
		if err := os.Remove(hookProgram(collie)); err != nil {
			t.Fatal(err)
		}
	case "crash":
		if err := s.WriteFile(hookProgram(collie), []byte("#!/bin/sh\nkill -KILL $$\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	switch tc.act {
	case "agent-down":
		b.Agent().Kill()
	case "frozen-before":
		if err := b.Agent().Freeze(); err != nil {
			t.Fatal(err)
		}
	}
	argv, env := clientArgv(c, api.URL, tc.mode, "make a mark")
	run := startClient(t, s, argv, env)
	decided := callToResult(api, run.done)
	switch tc.act {
	case "missing", "crash", "control", "agent-down", "frozen-before", "unoffered":
	default:
		card, ok := b.Card(mark, run.done)
		if !ok {
			var results []fakemodel.ToolResult
			if loop := api.TurnRequests(); len(loop) > 1 {
				results = loop[1].ToolResults()
			}
			t.Fatalf("the client ended before a card reached the device; the model got %+v\n%v", results, run.res)
		}
		checkCard(t, b, card, call)
		switch tc.act {
		case "yes":
			var reply map[string]any
			if status := b.Device.Answer(card, "yes", "", &reply); status != 200 {
				t.Fatalf("the tap yes: %d %v", status, reply)
			}
		case "no":
			var reply map[string]any
			if status := b.Device.Answer(card, "no", "not on a Friday", &reply); status != 200 {
				t.Fatalf("the tap no: %d %v", status, reply)
			}
		case "freeze":
			if err := b.Agent().Freeze(); err != nil {
				t.Fatal(err)
			}
		case "restart":
			b.Agent().Kill()
			b.StartAgent()
		case "bridge-down":
			b.Daemon().Kill()
		}
	}
	res := run.wait()
	if tc.act == "unoffered" {
		// The mode does not offer the tool, so no hook runs: no card.
		for _, card := range b.Cards() {
			if strings.Contains(card.Title, mark) {
				t.Errorf("a card for a tool the mode does not offer: %q", card.Title)
			}
		}
	}
	if tc.tool == "search" {
		if ran := searched(api, mark); ran != tc.wantRan {
			t.Fatalf("the search ran: %v, want %v\n%v", ran, tc.wantRan, res)
		}
		if tc.wantRan {
			return
		}
	}
	got, statErr := os.ReadFile(mark)
	if ran := statErr == nil; ran != tc.wantRan && tc.tool != "search" {
		t.Fatalf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
	}
	if tc.wantRan {
		if string(got) != call.content {
			t.Errorf("the tool wrote %q, want %q", got, call.content)
		}
		return
	}
	loop := api.TurnRequests()
	if len(loop) < 2 {
		t.Fatalf("%d requests of the agent loop, want the call and its result\n%v", len(loop), res)
	}
	results := loop[1].ToolResults()
	if len(results) != 1 || !(strings.Contains(results[0].Content, tc.wantInRes) || tc.orRes != "" && strings.Contains(results[0].Content, tc.orRes)) {
		t.Fatalf("tool results %+v, want one containing %q\n%v", results, tc.wantInRes, res)
	}
	// Before the client's own hook timeout: a client that timed the hook
	// out says so instead of the reason above (and Codex and Gemini run
	// the tool); and the time from the model's call to the result the
	// client sends back is under that timeout.
	if took := <-decided; took >= hook.ClientTimeoutFor(hookWait) {
		t.Fatalf("the client sent the call's result %v after the call; the hook's deny is due within %v, the client's own hook timeout is %v",
			took, hook.Deadline(hookWait), hook.ClientTimeoutFor(hookWait))
	}
}

// searched reports whether the client sent the model API the search for
// mark (Gemini's google_web_search asks the API, with Google Search as
// its tool, outside the agent loop).
func searched(api *fakemodel.Server, mark string) bool {
	for _, r := range api.Requests() {
		if r.Turn < 0 && strings.Contains(string(r.Body), "collie "+mark) && strings.Contains(string(r.Body), "googleSearch") {
			return true
		}
	}
	return false
}

// callToResult measures, in the background, the time from the model's
// tool call (the request that took the script's first turn) to the
// client's next request, which carries the call's result: the hook's
// decision and the client's own work around it. It sends the time once
// the client is done, or the longest time when it never sent a result.
func callToResult(api *fakemodel.Server, done <-chan struct{}) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-done; cancel() }()
		if _, err := api.Wait(ctx, func(r fakemodel.Request) bool { return r.Turn == 0 }); err != nil {
			out <- time.Duration(1<<63 - 1)
			return
		}
		called := time.Now()
		if _, err := api.Wait(ctx, func(r fakemodel.Request) bool { return r.Turn == 1 }); err != nil {
			out <- time.Duration(1<<63 - 1)
			return
		}
		out <- time.Since(called)
	}()
	return out
}

// checkCard checks that the card on the device names the tool and its
// input, under the bridge's agent.
func checkCard(t *testing.T, b *Bridge, card devicetest.Card, call toolCall) {
	t.Helper()
	if card.Agent != b.AgentName || card.Kind != "yes-no" {
		t.Errorf("the card is a %q question of %q, want a yes-no of %q", card.Kind, card.Agent, b.AgentName)
	}
	if !strings.Contains(card.Title, call.title) || !strings.Contains(card.Rationale, call.input) {
		t.Fatalf("the card does not name the tool and its input: %q %q", card.Title, card.Rationale)
	}
}
