package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/collie-linux/collie/internal/cli"
)

// command is one row of collie's command table. Dispatch, `collie help`,
// each command's --help, the completions' test and the scripts that walk
// every command read it: a command is described here once.
type command struct {
	name     string   // "durable attach": the words that call it
	synopsis []string // what follows the name, one line per form
	summary  string   // what it does, one line
	run      func(ctx context.Context, e *env, args []string) error
	who      who // whose command it is: the human's, or an agent's too (admit)
}

// who says in which environment a command runs (admit): a human's
// collie runs every command; an agent's (agent login) only those marked
// agents or anywhere; an incomplete agent environment only those marked
// anywhere, which need no session.
type who int

const (
	human    who = iota // the human's only, at the bridge
	agents              // also in an agent environment
	anywhere            // also in an incomplete agent environment
)

// commands is the table. A command's flags are its FlagSet's, defined
// where it runs; the synopsis shows them as the man page does.
func commands() []command {
	return []command{
		{"daemon", []string{"[--debug]"}, "run the bridge in the foreground (what collie.service runs)", cmdDaemon, human},
		{"demo", nil, "run the bridge with a demo durable agent, in a throwaway folder", cmdDemo, human},
		{"doctor", []string{"[--json] [--check NAME]..."}, "check the installation; prints the fix for every row that is not ok", cmdDoctor, human},
		{"durable attach", []string{"NAME --socket PATH", "NAME --url URL --token-env VAR [--ca-file FILE]"}, "attach the durable agent listening at PATH, or one on another host over HTTPS", cmdAttach, human},
		{"durable detach", []string{"NAME"}, "detach an agent", cmdDetach, human},
		{"durable list", []string{"[--json]"}, "list attached agents: reachable, or exactly why not", cmdList, human},
		{"show", []string{"[--json]"}, "show what the bridge holds: conversations, items, open questions", cmdShow, human},
		{"ask", []string{"KIND [OPTIONS] TITLE"}, "ask the user through a durable agent and wait for the answer (collie ask --help)", cmdAsk, anywhere},
		{"run", []string{"[--name NAME] [--no-systemd] [--sandbox] -- COMMAND [ARGS...]"}, "run a command (a coding agent) as the child of a durable agent of its own, so its tools cannot answer its questions", cmdRun, human},
		{"setup", []string{"claude|codex|gemini|opencode [--project DIR] [--no-hook | --no-mcp] [--dry-run] [--timeout DURATION]"}, "make a coding agent ask your phone before its tools run (its hook, fail-closed) and let its model ask you (collie mcp)", cmdSetup, human},
		{"mcp", []string{"[--agent NAME | --socket PATH] [--timeout DURATION]"}, "an MCP server on stdio: any MCP client asks the user through a durable agent", cmdMCP, human},
		{"pair", []string{"[--json] [--no-qr] [--local]"}, "pair a phone or browser: a single-use URL, QR code and check code", cmdPair, human},
		{"devices", []string{"[--json]"}, "list paired devices", cmdDevices, human},
		{"devices revoke", []string{"ID"}, "cut a device off at once", cmdRevoke, human},
		{"push test", []string{"[--json]"}, "send one test push through the guard and every provider; says what each answered", cmdPushTest, human},
		{"audit", []string{"[--agent NAME] [--device ID] [--event E] [--since DUR] [--json]"}, "show the audit log of device writes", cmdAudit, human},
		{"audit verify", []string{"[--json] [FILE...]"}, "check the audit log's hash chain and the journal's anchors", cmdAuditVerify, human},
		{"login", []string{"--url BASE [--ca-file FILE]"}, "in an agent environment: log this agent in to the bridge at BASE (agent login)", cmdLogin, agents},
		{"logout", nil, "in an agent environment: remove this agent's session and have the bridge revoke it", cmdLogout, agents},
		{"whoami", []string{"[--json]"}, "say who collie runs as: human, or the agent and its session's expiries (no network)", cmdWhoami, anywhere},
		{"agents list", []string{"[--json]"}, "list the agent platform's agents that logged in to the bridge, and their sessions", cmdAgentsList, human},
		{"agents revoke", []string{"ID"}, "revoke an agent's sessions at once (by session id or agent id)", cmdAgentsRevoke, human},
		{"version", nil, "print the version", cmdVersion, anywhere},
		{"help", nil, "print this list of commands", cmdHelp, anywhere},
	}
}

// usageLines are the command's synopsis lines, after "Usage: ".
func (c *command) usageLines() []string {
	if len(c.synopsis) == 0 {
		return []string{"collie " + c.name}
	}
	lines := make([]string, len(c.synopsis))
	for i, s := range c.synopsis {
		lines[i] = "collie " + c.name + " " + s
	}
	return lines
}

// lookup finds the command args call: "durable attach NAME" is the row
// "durable attach", "devices --json" the row "devices". A word that only
// groups commands (durable) needs one of them.
func lookup(args []string) (command, []string, error) {
	table := commands()
	if len(args) > 1 {
		for _, c := range table {
			if c.name == args[0]+" "+args[1] {
				return c, args[2:], nil
			}
		}
	}
	for _, c := range table {
		if c.name == args[0] {
			return c, args[1:], nil
		}
	}
	var subs []string
	for _, c := range table {
		if sub, ok := strings.CutPrefix(c.name, args[0]+" "); ok {
			subs = append(subs, sub)
		}
	}
	if len(subs) == 0 {
		return command{}, nil, unknownCommand(table, args)
	}
	group := command{name: args[0], synopsis: []string{"{" + strings.Join(subs, "|") + "} ..."}, summary: "commands: " + orList(subs),
		run: func(_ context.Context, e *env, rest []string) error {
			if len(rest) == 0 {
				return usagef("%s needs a subcommand: %s", args[0], orList(subs))
			}
			if _, err := parseArgs(newFlags("collie "+args[0], e), rest[:1], 0, 1); err != nil {
				return err
			}
			if s := cli.Suggest(rest[0], subs); s != "" {
				return usagef("unknown %s subcommand %q; did you mean collie %s %s?", args[0], rest[0], args[0], s)
			}
			return usagef("unknown %s subcommand %q; use %s", args[0], rest[0], orList(subs))
		}}
	return group, args[1:], nil
}

// unknownCommand is the mistake of args[0] not being a command: with the
// command it is nearest to, by edit distance over the table's names (one
// word, or two: "durable atach" is "durable attach"), when one is near.
func unknownCommand(table []command, args []string) error {
	var names []string
	for _, c := range table {
		if first, _, _ := strings.Cut(c.name, " "); !slices.Contains(names, first) {
			names = append(names, first)
		}
	}
	s := cli.Suggest(args[0], names)
	if s == "" {
		return usagef("unknown command %q; run collie help", args[0])
	}
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		for _, c := range table {
			if c.name == s+" "+args[1] {
				s = c.name
			}
		}
	}
	return usagef("unknown command %q; did you mean collie %s?", args[0], s)
}

// orList is "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// writeCommands writes collie's usage: every command of the table.
func writeCommands(w io.Writer) {
	const col = 37 // where the summaries start
	fmt.Fprint(w, "Usage: collie COMMAND [ARGS]\n\nCommands:\n")
	for _, c := range commands() {
		lines := c.usageLines()
		for i, line := range lines {
			line = strings.TrimPrefix(line, "collie ")
			switch {
			case i < len(lines)-1:
				fmt.Fprintf(w, "  %s\n", line)
			case len(line) < col:
				fmt.Fprintf(w, "  %-*s%s\n", col, line, c.summary)
			default:
				fmt.Fprintf(w, "  %s\n  %*s%s\n", line, col, "", c.summary)
			}
		}
	}
	fmt.Fprint(w, "\nRun collie COMMAND --help for a command's flags. See collie(1) for more.\n")
}
