// Package ask is `collie ask` (also `collie-agent ask`): a local program
// asks the user a question through a durable agent and waits for a
// human's tap (D1, D6). Asking is open to every local program of the user,
// the agent's own commands included; answering is not (C2). The package
// also holds the clients' rows for collie setup and collie doctor (their
// hook adapters are in ask/hook) and the `grants` command for "always
// allow".
//
// The question goes to the agent's socket as POST /v1/ask, which is not a
// write in C2's sense: it waits for a human and changes nothing the human
// decided. See collie-durable(7).
package ask

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Exit codes of `collie ask`, for scripts to branch on: those of the one
// exit table (cli.ExitCode), by the names ask gives them.
const (
	ExitYes       = cli.ExitOK        // answered: "yes", or any answer to a choice, line or form
	ExitNo        = cli.ExitFailed    // answered "no"
	ExitUsage     = cli.ExitUsage     // a mistake on the command line
	ExitTimedOut  = cli.ExitTimedOut  // no answer before --timeout: denied by default
	ExitWithdrawn = cli.ExitWithdrawn // withdrawn from a device, or its conversation closed
	ExitError     = cli.ExitUnasked   // could not ask: the agent unreachable, or it refused
)

// writeUsage writes the command's help, generated from its FlagSet as
// every other command's is (cli.WriteUsage); prog is "collie ask" or
// "collie-agent ask".
func writeUsage(w io.Writer, prog string, fs *flag.FlagSet) {
	cli.WriteUsage(w, []string{
		prog + " KIND [OPTIONS] [TITLE]",
		prog + " --hook " + strings.ReplaceAll(hookNames(), ", ", "|") + " [--agent NAME | --socket PATH] [--timeout DURATION]",
	}, `Ask the user a question on their paired device and wait for the answer.
KIND is exactly one of --yes-no, --choice (repeated), --line or --form (repeated).

Exit status: 0 yes (or answered), 1 no, 2 usage, 3 timed out (denied),
4 withdrawn, 5 could not ask. See collie-agent(1).`, fs)
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// The decisions other than yes (or an answer), as Run returns them: the
// CLI core's kinds, said already, with the statuses of its exit table.
var (
	ErrNo        = cli.ErrNo
	ErrTimedOut  = cli.ErrTimedOut
	ErrWithdrawn = cli.ErrWithdrawn
)

// HookExit is a hook's decision said already on stdout and stderr, with
// the exit status its client reads as that decision (Gemini CLI and Codex
// block on 2).
type HookExit = cli.Status

// Unasked is what kept the question from being asked, or its answer from
// coming back: the agent could not be found or reached, or it refused.
type Unasked = cli.Unasked

// Run runs the ask command with args. Every flag and argument is checked
// before the agent's socket is looked for, so a mistake on the command
// line is exit status 2 wherever it is run.
func Run(ctx context.Context, args []string, e Env) error {
	fs := flag.NewFlagSet(e.Prog, flag.ContinueOnError)
	var (
		yesNo, line, asJSON                                     bool
		choices, fields                                         multi
		title, rationale, key, tool, command, socket, agent, hk string
		timeout                                                 time.Duration
	)
	fs.BoolVar(&yesNo, "yes-no", false, "kind: a yes/no question")
	fs.BoolVar(&line, "line", false, "kind: one line of text")
	fs.Var(&choices, "choice", "kind: one option `LABEL` of a single-choice question (repeat, 2 to 32)")
	fs.Var(&fields, "form", "kind: one field `ID=LABEL` of a short form (repeat, 1 to 32)")
	fs.StringVar(&title, "title", "", "the question `TEXT` (or give it as the last argument)")
	fs.StringVar(&rationale, "rationale", "", "why it is asked, as `TEXT` (past 2048 bytes, its head and tail are shown)")
	fs.StringVar(&key, "tool-call", "", "asking again with the same `KEY` returns the first decision (one push per tool call)")
	fs.StringVar(&tool, "tool", "", "the tool `NAME` the question gates, for \"always allow\"")
	fs.StringVar(&command, "command", "", "the tool's command `CMD`, for \"always allow\"")
	fs.DurationVar(&timeout, "timeout", 0, "deny by default after `DURATION` (such as 30s, 10m); default: wait")
	fs.BoolVar(&asJSON, "json", false, "print the decision as JSON")
	fs.StringVar(&socket, "socket", "", "ask through the agent listening at `PATH`")
	fs.StringVar(&agent, "agent", "", "ask through collie-agent@`NAME` (default: $COLLIE_AGENT, or the only agent)")
	fs.StringVar(&hk, "hook", "", "be `CLIENT`'s tool hook ("+hookNames()+"): read its hook input on stdin, print its decision; deny on any failure")
	see := "see " + e.Prog + " --help"
	usageErr := func(format string, a ...any) error {
		return &cli.UsageError{Err: hint.Errorf(see, format, a...)}
	}
	rest, err := cli.Parse(fs, args, func() { writeUsage(e.Stdout, e.Prog, fs) })
	if err != nil {
		if cli.IsUsage(err) {
			return &cli.UsageError{Err: hint.Wrap(errors.Unwrap(err), see)}
		}
		return err
	}
	if timeout < 0 {
		return usageErr("--timeout must not be negative")
	}
	if hk != "" {
		h, wait, err := hook.Check(hk, timeout)
		if err != nil {
			return usageErr("%v", err)
		}
		if yesNo || line || len(choices) > 0 || len(fields) > 0 || title != "" || len(rest) > 0 {
			return usageErr("--hook %s takes the question from stdin; give no kind or title", hk)
		}
		if e.Remote != nil && (socket != "" || agent != "") {
			return usageErr("--socket and --agent name a local agent; in an agent environment collie ask goes to the bridge")
		}
		// Always a decision on stdout, and the exit status the client reads.
		if code := hook.Run(ctx, e.hook(), h, socket, agent, wait); code != 0 {
			return HookExit(code)
		}
		return nil
	}

	switch {
	case len(rest) == 1 && title == "":
		title = rest[0]
	case len(rest) > 0:
		return usageErr("unexpected argument %q; give the title once, with --title or as the last argument", rest[0])
	}
	// A title or rationale that cleaning changes (escapes, direction or
	// invisible characters, more than its limit) is shown cleaned, the
	// rationale's head and tail with the bytes not shown counted between
	// them, and the card says "Text shortened" (X3).
	title, titleChanged := sanitize.Line(title, sanitize.TitleBytes)
	if strings.TrimSpace(title) == "" {
		return usageErr("the question has no title; give --title TEXT")
	}
	excerpt, rationaleChanged := hook.Excerpt(rationale, sanitize.RationaleBytes)
	r := wire.AskRequest{RequestID: hook.NewID("ask"), Title: title, Rationale: excerpt, ToolCall: key, TimeoutSeconds: int64(timeout.Round(time.Second) / time.Second),
		Shortened: titleChanged || rationaleChanged}
	if rationaleChanged {
		r.Detail = hook.DetailOf(rationale) // the whole of it, a tap away on the card
	}
	if timeout > 0 && r.TimeoutSeconds == 0 {
		r.TimeoutSeconds = 1
	}
	kinds := 0
	if yesNo {
		kinds++
		r.Kind = wire.AskYesNo
	}
	if line {
		kinds++
		r.Kind = wire.AskLine
	}
	if len(choices) > 0 {
		kinds++
		r.Kind = wire.AskChoice
		for i, c := range choices {
			r.Options = append(r.Options, wire.Option{ID: fmt.Sprintf("c%d", i+1), Label: c})
		}
	}
	if len(fields) > 0 {
		kinds++
		r.Kind = wire.AskForm
		for _, f := range fields {
			id, label, ok := strings.Cut(f, "=")
			if !ok || id == "" {
				return usageErr("--form %q is not ID=LABEL", f)
			}
			r.Fields = append(r.Fields, wire.Field{ID: id, Label: label})
		}
	}
	if kinds != 1 {
		return usageErr("give exactly one kind: --yes-no, --choice (repeated), --line or --form (repeated)")
	}
	if command != "" && tool == "" {
		return usageErr("--command needs --tool NAME")
	}
	if tool != "" {
		r.Tool = &wire.ToolRef{Name: tool, Command: command}
	}
	if err := r.Validate(); err != nil {
		return usageErr("%v", err)
	}
	// Only now, with the command line found good, the agent.
	var path string
	if e.Refused != nil {
		return &Unasked{Err: e.Refused}
	}
	if e.Remote != nil {
		if socket != "" || agent != "" {
			return usageErr("--socket and --agent name a local agent; in an agent environment collie ask goes to the bridge")
		}
	} else if path, err = hook.FindSocket(socket, agent, e.Getenv); err != nil {
		return &Unasked{Err: err}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	he := e.hook()
	rep, err := ask(ctx, he.ClientFor(path), r, timeout)
	if err != nil {
		return &Unasked{Err: he.Unasked(err, path)}
	}
	return report(e, r, rep, asJSON, timeout)
}

// ask sends r and waits; the client gives the agent ten seconds past the
// timeout to say so itself before it denies on its own.
func ask(ctx context.Context, c *hook.Client, r wire.AskRequest, timeout time.Duration) (wire.AskReply, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout + 10*time.Second)
	}
	return c.Wait(ctx, r, deadline)
}

// Result is the --json output.
type Result struct {
	Status    string            `json:"status"` // answered, timed-out, withdrawn
	Question  string            `json:"question"`
	Answer    *string           `json:"answer"` // yes/no, the chosen label, the line; null otherwise
	OptionIDs []string          `json:"optionIds,omitempty"`
	Values    map[string]string `json:"values,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Always    bool              `json:"always,omitempty"`
	Grant     string            `json:"grant,omitempty"`
	Existing  bool              `json:"existing,omitempty"`
	Exit      int               `json:"exit"`
}

func result(r wire.AskRequest, rep wire.AskReply) Result {
	res := Result{Status: rep.Status, Question: rep.Question, OptionIDs: rep.OptionIDs, Values: rep.Values,
		Reason: rep.Reason, Always: rep.Always, Grant: rep.Grant, Existing: rep.Existing}
	set := func(s string) { res.Answer = &s }
	switch rep.Status {
	case wire.StatusAnswered:
		switch r.Kind {
		case wire.AskYesNo:
			if len(rep.OptionIDs) == 1 {
				set(rep.OptionIDs[0])
			}
			res.Exit = ExitYes
			if res.Answer == nil || *res.Answer != wire.Yes {
				res.Exit = ExitNo
			}
		case wire.AskChoice:
			for _, o := range r.Options {
				if len(rep.OptionIDs) == 1 && o.ID == rep.OptionIDs[0] {
					set(o.Label)
				}
			}
		case wire.AskLine:
			set(rep.Text)
		}
	case wire.StatusTimedOut:
		res.Exit = ExitTimedOut
		if r.Kind == wire.AskYesNo {
			set(wire.No)
		}
	default:
		res.Exit = ExitWithdrawn
	}
	return res
}

// report prints the decision. What the agent sent was cleaned on arrival
// (cleanReply); it is cleaned again here for the terminal (X1), each
// answer and value as one line, so that a newline in a value cannot forge
// another ID=VALUE line for a script that reads them.
func report(e Env, r wire.AskRequest, rep wire.AskReply, asJSON bool, timeout time.Duration) error {
	res := result(r, rep)
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintf(e.Stdout, "%s\n", sanitize.TerminalJSON(b))
		return decision(res.Exit)
	}
	line := sanitize.TerminalLine
	switch {
	case rep.Status == wire.StatusAnswered && r.Kind == wire.AskForm:
		for _, f := range r.Fields {
			fmt.Fprintf(e.Stdout, "%s=%s\n", line(f.ID), line(rep.Values[f.ID]))
		}
	case res.Answer != nil:
		fmt.Fprintln(e.Stdout, line(*res.Answer))
	}
	switch rep.Status {
	case wire.StatusTimedOut:
		fmt.Fprintf(e.Stderr, "%s: no answer within %s; denied by default\n", e.Prog, timeout)
	case wire.StatusWithdrawn:
		fmt.Fprintf(e.Stderr, "%s: the question was withdrawn (%s)\n", e.Prog, line(rep.Reason))
	}
	if rep.Status == wire.StatusAnswered && rep.Reason != "" {
		fmt.Fprintf(e.Stderr, "reason: %s\n", line(rep.Reason))
	}
	return decision(res.Exit)
}

// decision is the error Run returns for a result's exit status.
func decision(exit int) error {
	switch exit {
	case ExitNo:
		return ErrNo
	case ExitTimedOut:
		return ErrTimedOut
	case ExitWithdrawn:
		return ErrWithdrawn
	}
	return nil
}
