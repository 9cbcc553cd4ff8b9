//go:build linux

package agentclients

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/testkit/fakemodel"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// hookWait is the question's wait in these tests: short, so a row that
// waits for the deny is short too. The hook's deadline is 3 s later, and
// the client's own timeout (what setup writes) 12 s after that.
const hookWait = 5 * time.Second

// collieRow is one run of a real client gated by collie's hook, the
// question answered over the agent socket (the rows through the bridge
// are bridgeRow's).
type collieRow struct {
	mode string // the client's permission mode (or approval mode)
	hook bool   // collie setup ran
	// act is what happens once the tool is called: "yes" or "no" (a tap),
	// "none" (nobody answers), "freeze" (the agent is stopped after the
	// question is asked), "down" (no agent), "missing" (collie is not
	// there), "crash" (collie dies of SIGKILL at once).
	act       string
	wantRan   bool
	wantInRes string // in the tool's result the model is sent next, when it did not run
}

// runCollieRow runs one row with the client c.
func runCollieRow(t *testing.T, tc collieRow, c Client) (cardAfter time.Duration) {
	t.Helper()
	s := New(t)
	collie := installCollie(t, s)
	mark := filepath.Join(s.Project, "MARK")
	command := "echo ran > " + mark
	api := fakemodel.Start([]fakemodel.Turn{callTurn(c, command), fakemodel.Say("all done")})
	defer api.Close()
	switch c {
	case Gemini:
		if err := s.WriteFile(filepath.Join(s.Home, ".gemini", "settings.json"), geminiBaseSettings, 0o644); err != nil {
			t.Fatal(err)
		}
	case Codex:
		s.Env = append(s.Env, "CODEX_HOME="+filepath.Join(s.Home, ".codex"))
		if err := s.WriteFile(filepath.Join(s.Home, ".codex", "config.toml"), []byte(codexBaseConfig(api.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if tc.hook {
		setup(t, s, collie, string(c), hookWait)
	}
	var a *userAgent
	sock := filepath.Join(s.Home, "run", "desk", "code.sock")
	if tc.act != "down" {
		a = startAgent(t, s)
	}
	s.Env = append(s.Env, "COLLIE_AGENT_SOCKET="+sock)
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
	done := make(chan Result, 1)
	began := time.Now()
	go func() {
		res, err := runClient(s, c, api.URL, tc.mode)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	switch tc.act {
	case "yes", "no", "freeze":
		// The card appears once the fake API has sent the tool call.
		if _, err := api.Wait(context.Background(), func(r fakemodel.Request) bool { return r.Turn == 0 }); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		q, conv := a.question(t, 60*time.Second)
		cardAfter = time.Since(sent)
		if !strings.Contains(q.Title, "Run: echo ran >") || !strings.Contains(q.Rationale, command) {
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
	res := <-done
	took := time.Since(began)
	if res.ExitCode != 0 && c == Claude {
		t.Fatalf("%s: %v", c, res)
	}
	_, statErr := os.Stat(mark)
	if ran := statErr == nil; ran != tc.wantRan {
		t.Fatalf("the tool ran: %v, want %v\n%v", ran, tc.wantRan, res)
	}
	if !tc.wantRan {
		loop := api.TurnRequests()
		if len(loop) < 2 {
			t.Fatalf("%d requests of the agent loop, want the call and its result\n%v", len(loop), res)
		}
		results := loop[1].ToolResults()
		if len(results) != 1 || !strings.Contains(results[0].Content, tc.wantInRes) {
			t.Fatalf("tool results %+v, want one containing %q", results, tc.wantInRes)
		}
		// Before the client's own hook timeout, with the margin.
		if limit := hook.ClientTimeoutFor(hookWait); took > limit+10*time.Second {
			t.Fatalf("the run took %v; the hook's deny is due within %v of the call", took, hook.Deadline(hookWait))
		}
	}
	return cardAfter
}

// callTurn is the model turn that runs command with c's shell tool.
func callTurn(c Client, command string) fakemodel.Turn {
	switch c {
	case Codex:
		return fakemodel.ToolCall("exec_command", map[string]any{"cmd": command})
	case Gemini:
		return fakemodel.ToolCall("run_shell_command", map[string]any{"command": command, "description": "make a mark"})
	case OpenCode:
		return fakemodel.ToolCall("bash", map[string]any{"command": command, "description": "make a mark"})
	}
	return fakemodel.ToolCall("Bash", map[string]any{"command": command, "description": "make a mark"})
}

// runClient runs the client c once, non-interactively, in mode.
func runClient(s *Sandbox, c Client, apiURL, mode string) (Result, error) {
	switch c {
	case Gemini:
		return s.runGeminiHooked(context.Background(), apiURL, mode)
	case Codex:
		return s.runCodexHooked(context.Background(), apiURL, mode)
	}
	return s.RunClaude(context.Background(), clientTimeout, apiURL, "make a mark", "--permission-mode", mode)
}

// TestClaudeCode_CardLatency measures the time from the fake API's tool
// call to the card on the durable agent, with the real Claude Code and
// collie's hook, over a few runs.
func TestClaudeCode_CardLatency(t *testing.T) {
	Require(t, Claude)
	if testing.Short() {
		t.Skip("a measurement: runs Claude Code several times")
	}
	const runs = 7
	var took []time.Duration
	for i := range runs {
		t.Run("run", func(t *testing.T) {
			_ = i
			took = append(took, runCollieRow(t, collieRow{mode: "bypassPermissions", hook: true, act: "yes", wantRan: true}, Claude))
		})
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	t.Logf("tool call to card, %d runs: p50 %v, p99 (max) %v, all %v; load %s", len(took), took[len(took)/2], took[len(took)-1], took, testenv.Load())
}
