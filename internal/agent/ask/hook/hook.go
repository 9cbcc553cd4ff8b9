package hook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// hookInputCap bounds what the hook reads from stdin: a Write can carry a
// whole file.
const hookInputCap = 8 << 20

// PreToolUse is the part of a client's tool hook input the adapter uses
// (Claude Code's PreToolUse; Codex and Gemini CLI send the same fields).
// The schema is the client's and open: other fields are ignored.
type PreToolUse struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// Output is what the Claude Code adapter prints: Claude Code reads the
// decision from hookSpecificOutput.
type Output struct {
	HookSpecificOutput Decision `json:"hookSpecificOutput"`
}

// Decision is a PreToolUse decision.
type Decision struct {
	HookEventName            string `json:"hookEventName"`      // "PreToolUse"
	PermissionDecision       string `json:"permissionDecision"` // "allow" or "deny"
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// hookVerdict is a decision and its reason.
type hookVerdict struct {
	allow  bool
	reason string
}

// Check checks the hook's command line: the client named name, the wait
// (0: the client's default). It returns the adapter and the wait, or a
// sentence saying what is wrong.
func Check(name string, wait time.Duration) (*Adapter, time.Duration, error) {
	h := Named(name)
	if h == nil {
		return nil, 0, fmt.Errorf("--hook %q is not known; the adapters are: %s", name, Names())
	}
	if wait < 0 {
		return nil, 0, errors.New("--timeout must not be negative")
	}
	if wait == 0 {
		wait = h.DefaultWait()
	}
	return h, wait, nil
}

// Names lists the adapters' names, for messages.
func Names() string {
	var names []string
	for _, h := range Adapters() {
		names = append(names, h.Name)
	}
	return strings.Join(names, ", ")
}

// Run is the hook of h (from Check): it reads the client's hook input on
// stdin, asks the agent at socket (or the one agent names, or the one
// FindSocket finds; the bridge when e.Remote is set), and prints the
// client's decision. It returns the exit status the client reads as that
// decision. It always prints a decision, a deny on any failure.
func Run(ctx context.Context, e Env, h *Adapter, socket, agent string, wait time.Duration) int {
	path, err := "", e.Refused
	if e.Remote == nil && e.Refused == nil {
		path, err = FindSocket(socket, agent, e.Getenv)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runHook(ctx, e, h, path, err, wait)
}

// NewID is a new request id with prefix.
func NewID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// runHook reads the client's hook input on stdin, asks, and prints the
// client's decision; it returns the exit status the client reads. It
// always prints a decision: a failure to ask is a deny with the reason,
// never a silent allow. Whatever the agent or the bridge does (frozen,
// restarting, gone), the deny is printed Deadline(wait) after the
// start at the latest, before the client's own hook timeout.
func runHook(ctx context.Context, e Env, h *Adapter, path string, pathErr error, wait time.Duration) int {
	ctx, cancel := context.WithTimeout(ctx, Deadline(wait))
	defer cancel()
	event := make(chan string, 1) // the input's event, once read
	done := make(chan hookVerdict, 1)
	go func() { done <- decideHook(ctx, e, h, path, pathErr, wait, event) }()
	var v hookVerdict
	select {
	case v = <-done:
	case <-ctx.Done():
		v = stopped(ctx, wait)
	}
	ev := h.Events[0]
	select {
	case ev = <-event:
	default:
	}
	return h.Print(e.Stdout, e.Stderr, ev, v.allow, v.reason)
}

// stopped is the deny when ctx ended before a decision: the deadline,
// or a signal.
func stopped(ctx context.Context, wait time.Duration) hookVerdict {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return hookVerdict{reason: fmt.Sprintf("No decision within %s; Collie denies by default", Deadline(wait))}
	}
	return hookVerdict{reason: "Collie's hook was stopped before a decision; denied by default"}
}

// decideHook is runHook's work, run under its deadline. It sends the
// input's event on event once it is read.
func decideHook(ctx context.Context, e Env, h *Adapter, path string, pathErr error, wait time.Duration, event chan<- string) hookVerdict {
	deny := func(reason string) hookVerdict { return hookVerdict{reason: reason} }
	data, err := io.ReadAll(io.LimitReader(e.Stdin, hookInputCap+1))
	if err != nil {
		return deny("Collie could not read the hook input (" + err.Error() + "); denied by default")
	}
	if len(data) > hookInputCap {
		return deny(fmt.Sprintf("the tool call is over %d bytes, too large to show on a phone; Collie denies it by default", hookInputCap))
	}
	var in PreToolUse
	// Open schema (the client's), but read as a JSON.parse reads it:
	// exact-case, so "Tool_Name" is not tool_name, and a name twice or
	// invalid UTF-8 is refused, so what the human is shown is what runs.
	if err := jsonstrict.Unmarshal(data, &in, jsonstrict.Open); err != nil {
		return deny("Collie could not read the hook input as JSON (" + err.Error() + "); denied by default")
	}
	if !h.handles(in.HookEventName) || in.ToolName == "" {
		return deny(fmt.Sprintf("Collie's hook for %s handles %s, not %q; fix the hook's event in %s's settings (collie setup %s writes them)",
			h.Label, strings.Join(h.Events, " and "), in.HookEventName, h.Label, h.Name))
	}
	event <- in.HookEventName
	if h.isCollieMCPTool(in.ToolName) {
		return hookVerdict{allow: true, reason: "collie's own MCP tool asks the user itself"}
	}
	if pathErr != nil {
		return deny("Collie could not find the agent to ask (" + pathErr.Error() + "); denied by default")
	}
	r := questionFor(h, in)
	r.RequestID = NewID("hook")
	r.TimeoutSeconds = int64(max(wait.Round(time.Second)/time.Second, 1))
	if err := r.Validate(); err != nil {
		return deny("Collie could not make a question of this tool call (" + err.Error() + "); denied by default")
	}
	c := e.ClientFor(path)
	dl, _ := ctx.Deadline()
	rep, err := c.Wait(ctx, r, dl)
	if err != nil && ctx.Err() != nil {
		return stopped(ctx, wait) // the same deny as runHook's, whichever sees the end first
	}
	if err != nil {
		return deny("Collie could not ask (" + e.DescribeErr(err, path) + "); denied by default")
	}
	decision, reason := hookDecision(rep, wait)
	return hookVerdict{allow: decision == "allow", reason: reason}
}

// hookDecision turns the agent's reply into a PreToolUse decision: allow
// only for a human's "yes" or a grant the human made.
func hookDecision(rep wire.AskReply, timeout time.Duration) (decision, reason string) {
	note := ""
	if rep.Reason != "" {
		note = ": " + rep.Reason
	}
	switch rep.Status {
	case wire.StatusAnswered:
		if len(rep.OptionIDs) == 1 && rep.OptionIDs[0] == wire.Yes {
			if rep.Grant != "" && !rep.Always {
				return "allow", "Allowed through Collie by an always-allow grant the user made on a paired device (" + rep.Reason + ")"
			}
			return "allow", "Allowed by the user on a paired device through Collie" + note
		}
		return "deny", "Denied by the user on a paired device through Collie" + note
	case wire.StatusTimedOut:
		return "deny", fmt.Sprintf("No answer from the user within %s; Collie denies by default", timeout)
	case wire.StatusWithdrawn:
		return "deny", "The user withdrew the question on a paired device (" + rep.Reason + "); Collie denies by default"
	}
	return "deny", "Collie got no decision (" + rep.Status + "); denied by default"
}

// QuestionFor makes the yes-no question for a tool call: a title that says
// what the tool is about to do, a rationale with the detail, the tool-call
// key (Claude Code's tool_use_id, or a hash of the call), and the tool and
// command for "always allow".
func QuestionFor(in PreToolUse) wire.AskRequest { return questionFor(Claude, in) }

// questionFor is QuestionFor for the client h: its label, its tool names.
func questionFor(h *Adapter, in PreToolUse) wire.AskRequest {
	var ti map[string]any
	jsonstrict.Unmarshal(in.ToolInput, &ti) // checked whole in hookClaude; broken, it shows nothing
	str := func(k string) string {
		if c, ok := h.InputKeys[k]; ok {
			k = c
		}
		s, _ := ti[k].(string)
		return s
	}
	var title, detail, command string
	switch h.canonicalTool(in.ToolName) {
	case "Bash":
		command = str("command")
		title = "Run: " + firstLine(command)
		detail = "$ " + command
		if d := str("description"); d != "" {
			detail = d + "\n\n" + detail
		}
	case "Write":
		command = str("file_path")
		title = "Write " + command
		detail = str("content")
	case "Edit", "MultiEdit":
		command = str("file_path")
		title = "Edit " + command
		if old, nw := str("old_string"), str("new_string"); old != "" || nw != "" {
			detail = prefixLines("- ", old) + "\n" + prefixLines("+ ", nw)
		} else {
			detail = compact(in.ToolInput)
		}
	case "NotebookEdit":
		command = str("notebook_path")
		title = "Edit notebook " + command
		detail = str("new_source")
	case "Patch": // OpenCode's apply_patch
		command = str("patchText")
		title = "Apply a patch"
		detail = command
	case "Read":
		command = str("file_path")
		title = "Read " + command
	case "WebFetch":
		command = str("url")
		title = "Fetch " + command
		detail = str("prompt")
	case "WebSearch":
		command = str("query")
		title = "Search the web for " + command
	default:
		title = "Use " + in.ToolName
		detail = compact(in.ToolInput)
	}
	// Every cleaning and cut below is told on the card (X3): the flags
	// become the request's shortened mark.
	title, t := sanitize.Line(h.Label+": "+title, sanitize.TitleBytes)
	where, w := "", false
	if in.Cwd != "" {
		where, w = sanitize.Line(in.Cwd, sanitize.RationaleBytes/4)
		where = "\n\nin " + where
	}
	rationale, e := Excerpt(strings.TrimSpace(detail), sanitize.RationaleBytes-len(where))
	rationale, b := sanitize.Block(strings.TrimSpace(rationale+where), sanitize.RationaleBytes)
	r := wire.AskRequest{Kind: wire.AskYesNo, Title: title, Rationale: rationale, ToolCall: toolCallKey(h, in), Shortened: t || w || e || b}
	if e {
		r.Detail = DetailOf(strings.TrimSpace(detail))
	}
	// A command too long to send whole takes no part in "always allow": a
	// cut command could match a grant the whole one would not.
	if name, _ := sanitize.Line(in.ToolName, sanitize.LabelBytes); name == in.ToolName && len(command) <= sanitize.SendMaxBytes && utf8.ValidString(command) {
		r.Tool = &wire.ToolRef{Name: in.ToolName, Command: command}
	}
	return r
}

// toolCallKey is the D9 key: one tool call, what it would run included.
// With the client's call id (Claude Code's and Codex's tool_use_id, as
// the model API numbered it) it is the id and a digest of the tool and
// its input: an id alone is not the call, since a model API (a proxy, a
// local server that numbers each reply's calls from 0) can give two
// different calls one id, and the first call's yes must not let the
// second through unasked. Without an id it is a digest of the session
// and the call.
func toolCallKey(hc *Adapter, in PreToolUse) string {
	var input bytes.Buffer
	if json.Compact(&input, in.ToolInput) != nil {
		input.Reset()
		input.Write(in.ToolInput)
	}
	digest := func(parts ...string) string {
		sum := sha256.New()
		for _, p := range parts {
			sum.Write([]byte(p + "\x00"))
		}
		sum.Write(input.Bytes())
		return hex.EncodeToString(sum.Sum(nil))
	}
	if in.ToolUseID != "" && sanitize.ValidID(in.ToolUseID) && len(in.ToolUseID) <= 100 {
		return hc.Name + "-" + in.ToolUseID + "-" + digest(in.ToolName)[:16]
	}
	return hc.Name + "-" + digest(in.SessionID, in.ToolName)[:40]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func prefixLines(p, s string) string {
	if s == "" {
		return ""
	}
	return p + strings.ReplaceAll(s, "\n", "\n"+p)
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}
