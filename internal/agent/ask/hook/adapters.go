package hook

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Adapter is one coding agent's hook adapter: how the hook reads the
// client's hook input, how it prints allow and deny, and the client's
// hook timeouts. collie setup and collie doctor read the same row, with
// the client's config files (ask.HookClient). Every difference between
// the clients lives in a row of Adapters, not in a switch.
type Adapter struct {
	Name  string // "claude": the --hook value and collie setup's argument
	Label string // "Claude Code": first words of the card's title
	// Events are the hook_event_name values the adapter answers; the
	// first is the one setup installs.
	Events []string
	// Tools maps the client's tool names to the names QuestionFor knows
	// (Gemini's run_shell_command is Bash); the grant keeps the client's.
	Tools map[string]string
	// InputKeys maps the tool input's keys QuestionFor reads to the
	// client's (OpenCode's filePath for file_path).
	InputKeys map[string]string
	// ClientDefault is the client's own hook timeout when its config
	// gives none: the adapter's default wait fits inside it.
	ClientDefault time.Duration
	// Print writes the decision the client reads for event, and returns
	// the exit status the client treats as that decision.
	Print func(stdout, stderr io.Writer, event string, allow bool, reason string) int
	// MCPToolPrefix is what the client puts before an MCP tool's name for
	// collie's server (MCPServerName) in its hook input.
	MCPToolPrefix string
}

// MCPServerName is the name collie setup gives collie mcp in a client's
// MCP servers: the client calls its tools mcp__collie__ask_yes_no and so on.
const MCPServerName = "collie"

// MCPTools are collie mcp's tools. Each asks the user itself (or only
// adds a message to the conversation), so the hook lets a call of one
// through without asking first: no card about a card.
var MCPTools = []string{"ask_yes_no", "ask_choice", "ask_text", "ask_form", "notify", "approve"}

// The adapter's deadlines. The question times out after the wait (the
// --timeout); the adapter gives the agent hookGrace more to say so, then
// denies on its own whatever the agent or the bridge does. The client's
// hook timeout, which setup writes, is a further hookMargin later, so the
// client never kills the adapter before its deny is printed.
const (
	hookGrace  = 3 * time.Second
	hookMargin = 12 * time.Second
	// SetupWait is the wait collie setup writes: long enough to find the
	// phone, short enough that a forgotten question does not hold the
	// coding agent for long.
	SetupWait = 2 * time.Minute
)

// Deadline is how long after its start the adapter prints its decision
// at the latest, for a wait of wait.
func Deadline(wait time.Duration) time.Duration { return wait + hookGrace }

// ClientTimeoutFor is the client hook timeout that leaves the adapter's
// deadline a margin: what setup writes for a wait of wait.
func ClientTimeoutFor(wait time.Duration) time.Duration { return Deadline(wait) + hookMargin }

// DefaultWait is the adapter's wait when --timeout is not given: its
// deadline fits the client's default hook timeout with the margin.
func (h *Adapter) DefaultWait() time.Duration {
	return h.ClientDefault - hookGrace - hookMargin
}

// Adapters is the table of adapters, one row per client.
func Adapters() []*Adapter { return []*Adapter{Claude, Codex, Gemini, OpenCode} }

// Named returns the row called name, or nil.
func Named(name string) *Adapter {
	for _, h := range Adapters() {
		if h.Name == name {
			return h
		}
	}
	return nil
}

func (h *Adapter) handles(event string) bool { return slices.Contains(h.Events, event) }

// canonicalTool is the tool name QuestionFor's switch knows.
func (h *Adapter) canonicalTool(name string) string {
	if c, ok := h.Tools[name]; ok {
		return c
	}
	return name
}

// isCollieMCPTool reports whether the hook's tool is one of collie mcp's
// own, as the client names it.
func (h *Adapter) isCollieMCPTool(tool string) bool {
	if h.MCPToolPrefix == "" {
		return false
	}
	name, ok := strings.CutPrefix(tool, h.MCPToolPrefix)
	return ok && slices.Contains(MCPTools, name)
}

func printJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

// Claude is Claude Code 2.1.x: a PreToolUse command hook. It reads
// hookSpecificOutput.permissionDecision from stdout at exit status 0, in
// every permission mode (bypassPermissions included). Its default hook
// timeout is 600 s; the generated settings carry "onFailure": "block", so
// a hook that cannot start, crashes or is killed blocks the tool too.
var Claude = &Adapter{
	Name: "claude", Label: "Claude Code", Events: []string{"PreToolUse"},
	ClientDefault: 600 * time.Second,
	Print: func(stdout, _ io.Writer, event string, allow bool, reason string) int {
		printJSON(stdout, Output{Decision{HookEventName: "PreToolUse", PermissionDecision: decisionWord(allow), PermissionDecisionReason: reason}})
		return 0
	},
	MCPToolPrefix: "mcp__" + MCPServerName + "__",
}

// Codex is Codex CLI 0.169: a PreToolUse hook can only block (exit
// status 2, the reason on stderr, or a deny decision; an "allow" counts as
// a failed hook); allowing goes through the PermissionRequest hook
// (hookSpecificOutput.decision.behavior), which codex exec never asks.
// The adapter answers both with one question: the tool call's key is the
// same, so the second asks nothing new. Every other failure of the hook,
// its timeout included, lets the tool run, so the command setup writes
// ends in "|| exit 2". Codex skips a hook it does not trust.
var Codex = &Adapter{
	Name: "codex", Label: "Codex", Events: []string{"PreToolUse", "PermissionRequest"},
	Tools:         map[string]string{"shell": "Bash", "exec_command": "Bash", "local_shell": "Bash"},
	ClientDefault: 600 * time.Second,
	MCPToolPrefix: "mcp__" + MCPServerName + "__",
	Print: func(stdout, stderr io.Writer, event string, allow bool, reason string) int {
		if event == "PermissionRequest" {
			d := map[string]any{"behavior": "allow"}
			if !allow {
				d = map[string]any{"behavior": "deny", "message": reason}
			}
			printJSON(stdout, map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": event, "decision": d}})
			return 0
		}
		if allow {
			return 0 // PreToolUse cannot allow: no objection, Codex's own approval follows
		}
		printJSON(stdout, Output{Decision{HookEventName: "PreToolUse", PermissionDecision: "deny", PermissionDecisionReason: reason}})
		fmt.Fprintln(stderr, reason)
		return 2
	},
}

// Gemini is Gemini CLI 0.61: hooks.BeforeTool; {"decision":
// "allow"|"deny", "reason"} on stdout. Exit status 2 blocks with stderr
// as the reason; any other failure, and a hook timeout (milliseconds,
// default 60,000), lets the tool run. So a deny is said both ways, and
// the adapter's deadline sits well inside the timeout setup writes.
var Gemini = &Adapter{
	Name: "gemini", Label: "Gemini CLI", Events: []string{"BeforeTool"},
	Tools: map[string]string{"run_shell_command": "Bash", "write_file": "Write", "replace": "Edit",
		"read_file": "Read", "web_fetch": "WebFetch", "google_web_search": "WebSearch"},
	ClientDefault: 60 * time.Second,
	Print: func(stdout, stderr io.Writer, _ string, allow bool, reason string) int {
		printJSON(stdout, map[string]string{"decision": decisionWord(allow), "reason": reason})
		if allow {
			return 0
		}
		fmt.Fprintln(stderr, reason)
		return 2
	},
	MCPToolPrefix: "mcp_" + MCPServerName + "_",
}

// OpenCode 1.18 has no command hook: collie's plugin (ask's opencode.go)
// runs the adapter from its "tool.execute.before" and stops the tool
// unless it prints an allow at exit status 0. OpenCode has no timeout of
// its own for a plugin; the plugin's, ClientTimeoutFor the wait, plays
// that part.
var OpenCode = &Adapter{
	Name: "opencode", Label: "OpenCode", Events: []string{"tool.execute.before"},
	Tools: map[string]string{"bash": "Bash", "write": "Write", "edit": "Edit", "apply_patch": "Patch", "read": "Read",
		"webfetch": "WebFetch", "websearch": "WebSearch"},
	InputKeys:     map[string]string{"file_path": "filePath", "old_string": "oldString", "new_string": "newString"},
	ClientDefault: ClientTimeoutFor(SetupWait),
	Print: func(stdout, _ io.Writer, _ string, allow bool, reason string) int {
		printJSON(stdout, map[string]string{"decision": decisionWord(allow), "reason": reason})
		return 0
	},
	MCPToolPrefix: MCPServerName + "_",
}

func decisionWord(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}
