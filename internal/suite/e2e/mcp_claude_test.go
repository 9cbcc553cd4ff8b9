//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/suite/agentclients"
	"github.com/collie-linux/collie/internal/testkit/fakemodel"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// claudeRun bounds one run of Claude Code: against the fake API it
// answers in seconds; the question waits for the test's tap.
const claudeLimit = 2 * time.Minute

// mcpRig is the whole path of `collie mcp` under a real client: the agent
// socket-activated with its caller check on, the bridge with the device
// API on loopback and a paired device, and a sandbox where Claude Code
// runs as the same user inside the user manager's namespace, with
// collie mcp as its MCP server.
type mcpRig struct {
	t      *testing.T
	um     *systemdtest.UserManager
	bin    string
	dev    *client
	sb     *agentclients.Sandbox
	config string // Claude Code's --mcp-config
	pid    string // where the wrapper writes collie mcp's pid
}

func startMCPRig(t *testing.T) *mcpRig {
	t.Helper()
	agentclients.Require(t, agentclients.Claude)
	setup := demoBridge()
	setup.files[".config/collie-agent/demo.toml"] = "title = \"MCP\"\n"
	br := startBridge(t, 2*time.Minute, setup)
	um, bin := br.um, br.bin
	dev, _ := br.pair("e2e phone")

	sb := agentclients.NewFor(t, agentclients.User{Name: um.User, UID: um.UID, GID: um.GID})
	sb.Command = um.Command
	r := &mcpRig{t: t, um: um, bin: bin, dev: dev, sb: sb,
		config: filepath.Join(sb.Root, "mcp.json"), pid: filepath.Join(sb.Home, "collie-mcp.pid")}
	// A wrapper that says collie mcp's pid, so that a test can kill it in
	// the middle of a call, then becomes it. collie mcp finds the agent as
	// collie(1)'s example has it, with no flag: the only socket in the
	// runtime folder of the environment Claude Code passes on.
	wrapper := filepath.Join(sb.Root, "collie-mcp.sh")
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s\nexec %s mcp\n", r.pid, filepath.Join(bin, "collie"))
	if err := sb.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r.writeConfig(wrapper)
	return r
}

// writeConfig points Claude Code's MCP server "collie" at command.
func (r *mcpRig) writeConfig(command string) {
	r.t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"collie": map[string]any{"command": command, "args": []string{}}}})
	if err := r.sb.WriteFile(r.config, b, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// claudeRun is Claude Code running in the background.
type claudeRun struct {
	done chan struct{}
	res  agentclients.Result
}

// wait waits for the run to end.
func (c *claudeRun) wait() agentclients.Result { <-c.done; return c.res }

// claude runs Claude Code against api in the background with args after
// --mcp-config.
func (r *mcpRig) claude(api *fakemodel.Server, prompt string, args ...string) *claudeRun {
	c := &claudeRun{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		res, err := r.sb.RunClaude(context.Background(), claudeLimit, api.URL, prompt, append([]string{"--mcp-config", r.config}, args...)...)
		if err != nil {
			r.t.Error(err)
		}
		c.res = res
	}()
	return c
}

// mcpPID returns the pid of the collie mcp the wrapper started last.
func (r *mcpRig) mcpPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(r.pid)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// parentOf returns the parent of the process pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so read after its ")".
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// openCard is a question open on the device API.
type openCard struct {
	Conversation, ConvTitle, ID, Title string
	Revision                           int64
}

// card waits for the one question open on the device API while run
// goes on.
func (r *mcpRig) card(t *testing.T, run *claudeRun) openCard {
	t.Helper()
	var cards []openCard
	waitFor(t, loadGuard, "the question on the device API", func() bool {
		select {
		case <-run.done:
			t.Fatalf("claude ended before the question reached the device: %v", run.res)
		default:
		}
		var st device.State
		r.dev.call("GET", "/api/v1/state", "", nil, &st)
		cards = cards[:0]
		for _, a := range st.Agents {
			if a.Snapshot == nil {
				continue
			}
			for _, sp := range a.Snapshot.Spaces {
				for _, tab := range sp.Tabs {
					for _, c := range tab.Conversations {
						for _, q := range c.Questions {
							cards = append(cards, openCard{c.ID, c.Title, q.ID, q.Title, q.Revision})
						}
					}
				}
			}
		}
		return len(cards) > 0
	})
	if len(cards) != 1 {
		t.Fatalf("want one open question, have %+v", cards)
	}
	return cards[0]
}

// tap answers c on the device as the user does.
func (r *mcpRig) tap(t *testing.T, c openCard, option, reason string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"requestId": "tap-" + c.ID, "conversation": c.Conversation, "question": c.ID,
		"revision": c.Revision, "optionIds": []string{option}, "reason": reason})
	if status := r.dev.call("POST", "/api/v1/agents/demo/answer", string(b), map[string]string{device.WriteHeader: "1"}, nil); status != 200 {
		t.Fatalf("the tap: %d", status)
	}
}

// toolResult returns the result of the script's first call, id, as Claude Code
// sent it back to the model, in the second request of its loop.
func toolResult(t *testing.T, api *fakemodel.Server, id string, res agentclients.Result) fakemodel.ToolResult {
	t.Helper()
	loop := api.TurnRequests()
	if len(loop) < 2 {
		t.Fatalf("%d requests of the agent loop, want 2 (the call, then its result)\n%v", len(loop), res)
	}
	tr, ok := loop[1].ToolResult(id)
	if !ok {
		t.Fatalf("the second request carries no result for %s: %s\n%v", id, loop[1].Body, res)
	}
	for _, rq := range api.Requests() {
		if rq.Dialect == fakemodel.Other {
			t.Errorf("a request to elsewhere: %s %s", rq.Method, rq.Path)
		}
	}
	return tr
}

// TestClaudeCodeMCP_D1 runs the real Claude Code with collie mcp as its
// MCP server, through the real agent, bridge and device API: the model
// asks the user with mcp__collie__ask_yes_no and gets the tap back; and
// Claude Code's permission prompt (--permission-prompt-tool
// mcp__collie__approve in -p default mode) runs a Bash call on yes,
// blocks it on no, and blocks it when collie mcp dies in the middle of the
// call or never starts.
func TestClaudeCodeMCP_D1(t *testing.T) {
	r := startMCPRig(t)

	t.Run("ask_yes_no answered on the device", func(t *testing.T) {
		api := fakemodel.Start([]fakemodel.Turn{
			fakemodel.ToolCall("mcp__collie__ask_yes_no", map[string]any{"question": "Ship 1.2 to staging?", "details": "CI passed."}),
			fakemodel.Say("shipped"),
		})
		defer api.Close()
		run := r.claude(api, "ask me", "--allowedTools", "mcp__collie__ask_yes_no")
		c := r.card(t, run)
		// The session's conversation is named after the client and its
		// folder (outside HOME here, so in full).
		if c.Title != "Ship 1.2 to staging?" || c.ConvTitle != "claude-code in "+r.sb.Project {
			t.Errorf("the card reads %q in the conversation %q", c.Title, c.ConvTitle)
		}
		r.tap(t, c, "yes", "go ahead")
		res := run.wait()
		if res.ExitCode != 0 {
			t.Fatalf("claude: %v", res)
		}
		tr := toolResult(t, api, "toolu_fake0", res)
		if tr.IsError || !strings.Contains(tr.Content, `"answer":"yes"`) || !strings.Contains(tr.Content, `"note":"go ahead"`) {
			t.Errorf("the model got %+v, want the answer yes with the note", tr)
		}
	})

	t.Run("a client that passes no XDG_RUNTIME_DIR", func(t *testing.T) {
		// As the MCP SDK for TypeScript starts a server by default: collie
		// mcp finds the user's /run/user/UID itself.
		bare := filepath.Join(r.sb.Root, "collie-mcp-bare.sh")
		script := fmt.Sprintf("#!/bin/sh\nexec env -i HOME=\"$HOME\" PATH=\"$PATH\" USER=\"$USER\" %s mcp\n", filepath.Join(r.bin, "collie"))
		if err := r.sb.WriteFile(bare, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		r.writeConfig(bare)
		defer r.writeConfig(filepath.Join(r.sb.Root, "collie-mcp.sh"))
		api := fakemodel.Start([]fakemodel.Turn{
			fakemodel.ToolCall("mcp__collie__ask_yes_no", map[string]any{"question": "Found me?"}),
			fakemodel.Say("ok"),
		})
		defer api.Close()
		run := r.claude(api, "ask me", "--allowedTools", "mcp__collie__ask_yes_no")
		r.tap(t, r.card(t, run), "no", "")
		res := run.wait()
		if tr := toolResult(t, api, "toolu_fake0", res); tr.IsError || !strings.Contains(tr.Content, `"answer":"no"`) {
			t.Errorf("the model got %+v, want the answer no", tr)
		}
	})

	t.Run("Claude Code interrupted while the question waits", func(t *testing.T) {
		api := fakemodel.Start([]fakemodel.Turn{
			fakemodel.ToolCall("mcp__collie__ask_yes_no", map[string]any{"question": "Wait for me?"}),
			fakemodel.Say("ok"),
		})
		defer api.Close()
		run := r.claude(api, "ask me", "--allowedTools", "mcp__collie__ask_yes_no")
		r.card(t, run)
		// Ctrl-C: SIGINT to Claude Code, collie mcp's parent.
		if err := syscall.Kill(parentOf(t, r.mcpPID(t)), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		waitFor(t, loadGuard, "the card to leave the device", func() bool {
			var st device.State
			r.dev.call("GET", "/api/v1/state", "", nil, &st)
			return len(questions(st)) == 0
		})
		res := run.wait()
		t.Logf("claude after SIGINT: %v", res)
	})

	bash := func(t *testing.T, tap func(openCard)) (ran bool, tr fakemodel.ToolResult, out agentclients.ClaudeOutput) {
		t.Helper()
		mark := filepath.Join(r.sb.Project, "MARK")
		os.Remove(mark)
		// Each run's call has an id of its own, as Claude Code's are: the
		// agent gives a second call with an id it has seen the first answer.
		id := fmt.Sprintf("toolu_%d", time.Now().UnixNano())
		api := fakemodel.Start([]fakemodel.Turn{
			{Call: &fakemodel.Call{Name: "Bash", Input: map[string]any{"command": "echo ran > " + mark, "description": "make a mark"}, ID: id}},
			fakemodel.Say("all done"),
		})
		defer api.Close()
		run := r.claude(api, "make a mark", "--permission-mode", "default", "--permission-prompt-tool", "mcp__collie__approve")
		if tap != nil {
			tap(r.card(t, run))
		}
		res := run.wait()
		t.Logf("claude: %v", res)
		_, err := os.Stat(mark)
		tr = toolResult(t, api, id, res)
		out, perr := agentclients.ParseClaudeOutput(res.Stdout)
		if perr != nil {
			t.Errorf("%v\n%v", perr, res)
		}
		return err == nil, tr, out
	}

	t.Run("approve: yes runs the tool", func(t *testing.T) {
		ran, tr, _ := bash(t, func(c openCard) {
			if !strings.Contains(c.Title, "Bash") && !strings.Contains(c.Title, "echo ran") {
				t.Errorf("the card reads %q; want the tool call", c.Title)
			}
			r.tap(t, c, "yes", "")
		})
		if !ran || tr.IsError {
			t.Errorf("after yes: ran %v, the model got %+v", ran, tr)
		}
	})

	t.Run("approve: no blocks the tool", func(t *testing.T) {
		ran, tr, out := bash(t, func(c openCard) { r.tap(t, c, "no", "not on a Friday") })
		if ran || !tr.IsError || !strings.Contains(tr.Content, "denied this tool call on their device: not on a Friday") {
			t.Errorf("after no: ran %v, the model got %+v", ran, tr)
		}
		if len(out.PermissionDenials) != 1 {
			t.Errorf("permission_denials %+v, want the one call", out.PermissionDenials)
		}
	})

	t.Run("approve: collie mcp killed in the middle of the call", func(t *testing.T) {
		ran, tr, _ := bash(t, func(openCard) {
			if err := syscall.Kill(r.mcpPID(t), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("the model got %+v", tr)
		if ran {
			t.Errorf("FAIL OPEN: the tool ran after collie mcp died in the middle of the permission prompt; the model got %+v", tr)
		}
	})

	t.Run("approve: the MCP server never starts", func(t *testing.T) {
		r.writeConfig("/bin/false")
		defer r.writeConfig(filepath.Join(r.sb.Root, "collie-mcp.sh"))
		mark := filepath.Join(r.sb.Project, "MARK")
		os.Remove(mark)
		api := fakemodel.Start([]fakemodel.Turn{
			{Call: &fakemodel.Call{Name: "Bash", Input: map[string]any{"command": "echo ran > " + mark}, ID: fmt.Sprintf("toolu_%d", time.Now().UnixNano())}},
			fakemodel.Say("all done"),
		})
		defer api.Close()
		res := r.claude(api, "make a mark", "--permission-mode", "default", "--permission-prompt-tool", "mcp__collie__approve").wait()
		// Claude Code 2.1.328 stops at the call with an error naming the
		// missing tool: the call never runs.
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("FAIL OPEN: the tool ran with no permission prompt server\n%v", res)
		}
		if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), "mcp__collie__approve (passed via --permission-prompt-tool) not found") {
			t.Errorf("want claude to stop with the prompt tool not found: %v", res)
		}
	})
}
