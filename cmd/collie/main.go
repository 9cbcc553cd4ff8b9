// Command collie is Collie's bridge daemon and its command line: it reads
// durable agents over private sockets and shows their conversations and
// questions to the user's paired devices.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collie-linux/collie/internal/config"
	"github.com/collie-linux/collie/internal/systemd/journald"
	"github.com/collie-linux/collie/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// env is what a subcommand works with.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

func (e *env) paths() (config.Paths, error) { return config.FromEnv(e.getenv) }

const usage = `Usage: collie COMMAND [ARGS]

Commands:
  daemon                               run the bridge in the foreground (what collie.service runs)
  demo                                 run the bridge with a demo durable agent, in a throwaway folder
  doctor [--json] [--check NAME]       check the installation; prints the fix for every row that is not ok
  durable attach NAME --socket PATH    attach the durable agent listening at PATH
  durable attach NAME --url URL --token-env VAR [--ca-file FILE]
                                       attach an agent on another host, over HTTPS
  durable detach NAME                  detach an agent
  durable list [--json]                list attached agents: reachable, or exactly why not
  show [--json]                        show what the bridge holds: conversations, items, open questions
  ask KIND [OPTIONS] TITLE             ask the user through a durable agent and wait for the answer (collie ask --help)
  pair [--json] [--no-qr]              pair a phone or browser: a single-use URL, QR code and check code
  devices [--json]                     list paired devices
  devices revoke ID                    cut a device off at once
  audit [--agent N] [--device ID] [--event E] [--since DUR] [--json] | audit verify [FILE...]
                                       show the audit log of device writes; verify checks its hash chain
  version                              print the version

See collie(1) for more.
`

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv}
	err := dispatch(context.Background(), e, args)
	if err == nil {
		return 0
	}
	// Every way out of every command, the daemon's included, ends here:
	// in the journal (collie.service) at PRIORITY=3, else on stderr.
	var ue usageError
	if errors.As(err, &ue) {
		journald.Fatal(stderr, "collie", ue.msg, nil)
		return 2
	}
	journald.Fatal(stderr, "collie", err.Error(), nil)
	return 1
}

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return usagef("no command given")
	}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "daemon":
		return cmdDaemon(ctx, e, rest)
	case "demo":
		return cmdDemo(ctx, e, rest)
	case "doctor":
		return cmdDoctor(ctx, e, rest)
	case "durable":
		return cmdDurable(ctx, e, rest)
	case "pair":
		return cmdPair(ctx, e, rest)
	case "devices":
		return cmdDevices(ctx, e, rest)
	case "audit":
		return cmdAudit(ctx, e, rest)
	case "ask":
		return cmdAsk(ctx, e, rest)
	case "show":
		return cmdShow(ctx, e, rest)
	case "version", "--version", "-version":
		fmt.Fprintln(e.stdout, "collie", version.String())
		return nil
	case "help", "-h", "--help", "-help":
		fmt.Fprint(e.stdout, usage)
		return nil
	default:
		return usagef("unknown command %q; run collie help", cmd)
	}
}

func cmdDurable(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		return usagef("durable needs a subcommand: attach, detach or list")
	}
	switch sub, rest := args[0], args[1:]; sub {
	case "attach":
		return cmdAttach(ctx, e, rest)
	case "detach":
		return cmdDetach(ctx, e, rest)
	case "list":
		return cmdList(ctx, e, rest)
	default:
		return usagef("unknown durable subcommand %q; use attach, detach or list", sub)
	}
}

// splitName takes the one positional NAME from args, wherever it stands
// among the flags, so "attach NAME --socket P" and "attach --socket P NAME"
// both work.
func splitName(args []string, flagsWithValue ...string) (name string, flags []string, err error) {
	var names []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") {
			flags = append(flags, a)
			bare := strings.TrimLeft(a, "-")
			for _, f := range flagsWithValue {
				if bare == f && i+1 < len(args) {
					flags = append(flags, args[i+1])
					i++
				}
			}
			continue
		}
		names = append(names, a)
	}
	if len(names) != 1 {
		return "", nil, usagef("give exactly one agent NAME")
	}
	return names[0], flags, nil
}
