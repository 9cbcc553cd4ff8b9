// Command collie-agent is Collie's reference durable agent: it serves a
// conversation and questions over a private Unix socket, started by systemd
// socket activation (collie-agent@NAME.socket) or on its own. Local
// programs ask questions through it (collie-agent ask, collie ask), and its
// belt buttons and starters run fixed commands from its config.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/version"
)

// main is the one way out of collie-agent: every command returns an
// error, and the CLI core (cli.Program.Main) gives it its status from the
// one exit table, the one of collie(1) EXIT STATUS, and says it once.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// env is what a command works with.
type env struct {
	stdout, stderr io.Writer
	name           string // the agent's name, for the journal's AGENT
	command        string // the command running, "" for the agent itself
	json           bool   // the command line asked for JSON: errors are JSON too
}

// command is one row of collie-agent's command table: dispatch, the
// usage and each command's --help read it, and so do the scripts that
// walk every command (cmd/collie/testdata/script/usage.txtar).
type command struct {
	name     string // "" for the agent itself
	synopsis string
	summary  string
	run      func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"", "[--name NAME] [--socket PATH] [--config FILE] [--check-config] [--version]",
			"Serve the durable agent NAME on its private socket (collie-agent@NAME.socket), or check its config.", cmdServe},
		{"ask", "KIND [OPTIONS] TITLE", "Ask the user through the agent and wait for the answer (collie-agent ask --help).", cmdAsk},
		{"grants", "[--agent NAME | --socket PATH] [--json] [--revoke ID | --revoke-all]", `List or revoke the agent's "always allow" grants.`, cmdGrants},
		{"version", "", "Print the version.", cmdVersion},
		{"help", "", "Print this usage.", cmdHelp},
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, name: "demo", json: cli.WantsJSON(nil, args)}
	p := cli.Program{Name: "collie-agent", Stderr: stderr, JSON: e.json, Command: func() string { return e.command },
		Journal: func() map[string]string { return map[string]string{"agent": e.name} }}
	return p.Main(context.Background(), func(ctx context.Context) error { return dispatch(ctx, e, args) })
}

func dispatch(ctx context.Context, e *env, args []string) error {
	table := commands()
	if len(args) > 0 {
		for _, c := range table[1:] {
			if args[0] == c.name {
				e.command = c.name
				return c.run(ctx, e, args[1:])
			}
		}
		// A mistyped command, before its flags are taken for the agent's.
		if err := unexpected(args[0]); !strings.HasPrefix(args[0], "-") && strings.Contains(err.Error(), "did you mean") {
			return err
		}
	}
	return table[0].run(ctx, e, args)
}

// unexpected is the mistake of an argument the agent does not take: with
// the command it is nearest to, when one is near (edit distance).
func unexpected(arg string) error {
	var names []string
	for _, c := range commands()[1:] {
		names = append(names, c.name)
	}
	if s := cli.Suggest(arg, names); s != "" {
		return cli.Usagef("unexpected argument %q; did you mean collie-agent %s?", arg, s)
	}
	return cli.Usagef("unexpected argument %q", arg)
}

// writeUsage is collie-agent's usage: every command of the table, and
// the agent's own flags.
func writeUsage(w io.Writer, fs *flag.FlagSet) {
	var lines []string
	for _, c := range commands() {
		lines = append(lines, strings.TrimSpace(strings.Join([]string{"collie-agent", c.name, c.synopsis}, " ")))
	}
	lines[0] = strings.ReplaceAll(lines[0], "  ", " ")
	cli.WriteUsage(w, lines, commands()[0].summary, fs)
}

func cmdVersion(_ context.Context, e *env, args []string) error {
	if err := noArgs(e, "collie-agent version", "Print the version.", args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "collie-agent", version.String())
	return nil
}

func cmdHelp(_ context.Context, e *env, args []string) error {
	if err := noArgs(e, "collie-agent help", "Print this usage.", args); err != nil {
		return err
	}
	writeUsage(e.stdout, serveFlags(new(serveOptions)))
	return nil
}

// noArgs parses the command line of a command that takes no flag and no
// argument; its --help says what it does (about).
func noArgs(e *env, name, about string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	rest, err := cli.Parse(fs, args, func() { cli.WriteUsage(e.stdout, []string{name}, about, fs) })
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return cli.Usagef("unexpected argument %q", rest[0])
	}
	return nil
}

func cmdAsk(ctx context.Context, e *env, args []string) error {
	return ask.Run(ctx, args, ask.Env{Stdin: os.Stdin, Stdout: e.stdout, Stderr: e.stderr, Getenv: os.Getenv, Prog: "collie-agent ask"})
}

func cmdGrants(ctx context.Context, e *env, args []string) error {
	return ask.Grants(ctx, args, ask.Env{Stdin: os.Stdin, Stdout: e.stdout, Stderr: e.stderr, Getenv: os.Getenv, Prog: "collie-agent grants"})
}
