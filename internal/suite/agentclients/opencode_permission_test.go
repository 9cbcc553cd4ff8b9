//go:build linux

package agentclients

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// ocRunTimeout bounds one opencode run: its start-up alone takes tens of
// seconds on a loaded machine.
const ocRunTimeout = 4 * time.Minute

// ocRow is one case of the real OpenCode gated by collie's plugin.
type ocRow struct {
	name string
	// setup runs collie setup opencode (the plugin, "permission": "ask");
	// without it opencode.json has no permission (OpenCode runs bash).
	setup bool
	yolo  bool // opencode run --dangerously-skip-permissions
	// agentAsk gives the build agent a "bash": "ask" of its own, which
	// the plugin must answer too (or opencode run refuses after a yes).
	agentAsk bool
	// act is what happens: "yes" or "no" (a tap), "none" (nobody
	// answers), "freeze" (the agent is stopped after the question),
	// "down" (no agent), "missing" (no collie), "crash" (collie dies of
	// SIGKILL), "hang" (collie never answers nor exits), "broken" (the
	// plugin file does not load), "removed" (the plugin file is gone).
	act     string
	wantRan bool
	// wantInRes is in the tool's result the model is sent next; for a
	// tool OpenCode rejected itself (no plugin) it is in its stderr.
	wantInRes   string
	wantStderr  string
	wantWithin  time.Duration // from the tool call to the deny
	wantNoModel bool          // the run ends without telling the model
}

// TestOpenCode_CollieGate_D1 runs the real OpenCode (opencode run) with
// what collie setup opencode writes (collie's plugin and "permission":
// "ask") and a real durable agent: the tool call becomes a card naming
// the tool and its input, yes runs it, no blocks it and the model is told
// the reason, and no answer, a frozen or absent agent, a missing, crashing
// or hung collie deny it; with the plugin broken or removed OpenCode's own
// "ask" stays and opencode run refuses the tool. --dangerously-skip-
// permissions (OpenCode's yolo) is gated too. The first row is the
// control: without the set-up the tool runs, so every deny below is the
// plugin's (or the permission's) doing.
func TestOpenCode_CollieGate_D1(t *testing.T) {
	Require(t, OpenCode)
	deny := "Denied by the user on a paired device through Collie: not on a Friday"
	pluginDeadline := hook.ClientTimeoutFor(hookWait)
	rows := []ocRow{
		{name: "control: no set-up, the tool runs", act: "none", wantRan: true},
		{name: "yes runs it", setup: true, act: "yes", wantRan: true},
		{name: "yes runs it, the agent's own ask too", setup: true, agentAsk: true, act: "yes", wantRan: true},
		{name: "no blocks it", setup: true, act: "no", wantInRes: deny},
		{name: "no, dangerously-skip-permissions", setup: true, yolo: true, act: "no", wantInRes: deny},
		{name: "no answer denies at the timeout", setup: true, act: "none", wantInRes: "No answer from the user within 5s; Collie denies by default", wantWithin: hook.Deadline(hookWait)},
		{name: "agent frozen after asking", setup: true, act: "freeze", wantInRes: "Collie denies by default", wantWithin: hook.Deadline(hookWait)},
		{name: "agent down", setup: true, act: "down", wantInRes: "cannot reach the agent"},
		{name: "collie missing", setup: true, act: "missing", wantInRes: "Collie could not run"},
		{name: "collie crashes", setup: true, act: "crash", wantInRes: "collie ended without a decision (killed by SIGKILL)"},
		{name: "collie hangs", setup: true, act: "hang", wantInRes: "No decision from collie within", wantWithin: pluginDeadline},
		{name: "plugin broken: OpenCode's own ask refuses", setup: true, act: "broken", wantStderr: "auto-rejecting", wantNoModel: true},
		{name: "plugin removed: OpenCode's own ask refuses", setup: true, act: "removed", wantStderr: "auto-rejecting", wantNoModel: true},
	}
	// Two rows at a time: each opencode run spends most of a minute
	// starting, and thirteen in a row outlast go test's timeout; more at
	// once starve each other on a small machine.
	slots := make(chan struct{}, 2)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			runOpenCodeRow(t, tc)
		})
	}
}

func runOpenCodeRow(t *testing.T, tc ocRow) {
	t.Helper()
	s := New(t)
	collie := installCollie(t, s)
	mark := filepath.Join(s.Project, "MARK")
	command := "echo ran > " + mark
	api := fakemodel.Start([]fakemodel.Turn{
		fakemodel.ToolCall("bash", map[string]any{"command": command, "description": "make a mark"}),
		fakemodel.Say("all done")})
	defer api.Close()
	cfg := OpenCodeConfig(api.URL, nil)
	if tc.agentAsk {
		var m map[string]any
		if err := json.Unmarshal(cfg, &m); err != nil {
			t.Fatal(err)
		}
		m["agent"] = map[string]any{"build": map[string]any{"permission": map[string]any{"bash": "ask"}}}
		cfg, _ = json.MarshalIndent(m, "", "  ")
	}
	if err := s.WriteFile(s.OpenCodeConfigPath(), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(filepath.Dir(s.OpenCodeConfigPath()), "plugin", "collie.js")
	if tc.setup {
		setup(t, s, collie, "opencode", hookWait)
		if _, err := os.Stat(plugin); err != nil {
			t.Fatalf("collie setup opencode wrote no plugin: %v", err)
		}
	}
	var a *userAgent
	if tc.act != "down" {
		a = startAgent(t, s)
	}
	s.Env = append(s.Env, "COLLIE_AGENT_SOCKET="+filepath.Join(s.Home, "run", "desk", "code.sock"))
	switch tc.act {
	case "missing":
		if err := os.Remove(hookProgram(collie)); err != nil {
			t.Fatal(err)
		}
	case "crash":
		if err := s.WriteFile(hookProgram(collie), []byte("#!/bin/sh\nkill -KILL $$\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	case "hang":
		if err := s.WriteFile(hookProgram(collie), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	case "broken":
		if err := s.WriteFile(plugin, []byte("export const CollieGate = async () => ({ \"tool.execute.before\": \n"), 0o644); err != nil {
			t.Fatal(err)
		}
	case "removed":
		if err := os.Remove(plugin); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	if tc.yolo {
		args = append(args, "--dangerously-skip-permissions")
	}
	done := make(chan Result, 1)
	// ended ends when the run does: a wait for a request that will not
	// come then fails with the run's output.
	ended, end := context.WithCancel(context.Background())
	defer end()
	go func() {
		defer end()
		res, err := s.RunOpenCode(context.Background(), ocRunTimeout, api.URL, "make a mark", args...)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitTurn := func(turn int) {
		t.Helper()
		if _, err := api.Wait(ended, func(r fakemodel.Request) bool { return r.Turn == turn }); err != nil {
			t.Fatalf("OpenCode ended before request %d of its loop: %v\n%v", turn, err, <-done)
		}
	}
	// The tool call is sent once the first request of the loop is in.
	waitTurn(0)
	called := time.Now()
	switch tc.act {
	case "yes", "no", "freeze":
		q, conv := a.question(t, 60*time.Second)
		if !strings.HasPrefix(q.Title, "OpenCode: Run: echo ran >") || !strings.Contains(q.Rationale, "$ "+command) ||
			!strings.Contains(q.Rationale, "make a mark") {
			t.Fatalf("the card does not name the tool and its input: %q %q", q.Title, q.Rationale)
		}
		switch tc.act {
		case "yes":
			a.answer(t, q, conv, "yes", "")
		case "no":
			a.answer(t, q, conv, "no", "not on a Friday")
		case "freeze":
			if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
	}
	var denyAfter time.Duration
	if !tc.wantNoModel {
		// The tool's result (or its deny) goes back to the model.
		waitTurn(1)
		denyAfter = time.Since(called)
	}
	res := <-done
	_, statErr := os.Stat(mark)
	if ran := statErr == nil; ran != tc.wantRan {
		t.Fatalf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
	}
	if tc.wantStderr != "" && !strings.Contains(string(res.Stderr), tc.wantStderr) {
		t.Fatalf("stderr lacks %q\n%v", tc.wantStderr, res)
	}
	if tc.wantNoModel {
		if n := len(api.TurnRequests()); n != 1 {
			t.Fatalf("%d requests of the agent loop, want 1 (OpenCode refused the tool and ended the run)\n%v", n, res)
		}
		return
	}
	tr := loopResult(t, api)
	if tc.wantRan {
		if tr.IsError {
			t.Fatalf("the tool's result is an error: %+v", tr)
		}
		return
	}
	if !tr.IsError || !strings.Contains(tr.Content, tc.wantInRes) {
		t.Fatalf("tool result %+v, want an error containing %q\n%v", tr, tc.wantInRes, res)
	}
	// OpenCode has no plugin timeout: the deny is collie's, or the
	// plugin's own at its deadline, never later. The slack is for a
	// loaded machine (OpenCode's own turn-around).
	if tc.wantWithin > 0 && denyAfter > tc.wantWithin+15*time.Second {
		t.Fatalf("the deny came %v after the tool call, want about %v", denyAfter, tc.wantWithin)
	}
	t.Logf("denied %v after the tool call", denyAfter.Round(time.Millisecond))
}

// TestOpenCode_PluginPermissionAskNeverCalled records why collie's plugin
// gates tools from "tool.execute.before": OpenCode 1.18 declares a plugin
// hook "permission.ask" (output.status "allow"/"deny") but never calls
// it. A plugin that would allow from it is not called, and opencode run
// still refuses the "ask" permission.
func TestOpenCode_PluginPermissionAskNeverCalled(t *testing.T) {
	Require(t, OpenCode)
	s := New(t)
	mark := filepath.Join(s.Project, "MARK")
	api := fakemodel.Start(markScript("bash", "command", mark, map[string]any{"description": "make a mark"}))
	defer api.Close()
	if err := s.WriteFile(s.OpenCodeConfigPath(), OpenCodeConfig(api.URL, map[string]any{"bash": "ask"}), 0o644); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(s.Root, "record")
	if err := s.WriteFile(record, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plugin := `import { appendFileSync } from "node:fs";
export const Probe = async () => ({
  "permission.ask": async (input, output) => { appendFileSync(` + strconvQuote(record) + `, "permission.ask\n"); output.status = "allow"; },
  "tool.execute.before": async (input) => { appendFileSync(` + strconvQuote(record) + `, "tool.execute.before " + input.tool + "\n"); },
});
`
	if err := s.WriteFile(filepath.Join(filepath.Dir(s.OpenCodeConfigPath()), "plugin", "probe.js"), []byte(plugin), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := s.RunOpenCode(context.Background(), ocRunTimeout, api.URL, "make a mark")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(record)
	if string(got) != "tool.execute.before bash\n" {
		t.Fatalf("the plugin's hooks called: %q, want only tool.execute.before\n%v", got, res)
	}
	if _, err := os.Stat(mark); err == nil || !strings.Contains(string(res.Stderr), "auto-rejecting") {
		t.Fatalf("the tool ran, or was not refused by opencode run's own ask\n%v", res)
	}
}

// strconvQuote is a JS string literal of s (JSON's is one).
func strconvQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
