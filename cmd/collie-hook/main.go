// Command collie-hook is collie's tool hook for coding agents: the
// program a client's hook runs before each tool call (collie setup
// writes its path into the client's settings). It is collie ask --hook,
// the same code (internal/agent/ask/hook), in a program of its own that
// links little else, since it starts once per tool call: a call an
// "always allow" grant covers costs about half what collie ask --hook does.
//
//	collie-hook --hook claude|codex|gemini|opencode [--agent NAME | --socket PATH] [--timeout DURATION]
//
// Like collie ask --hook, it reads the client's hook input on stdin and
// always prints a decision, a deny on any failure. In an agent
// environment the question goes to the bridge over the agent's session,
// which is collie's own work: the hook runs collie ask --hook there.
//
// make build builds it with CGO_ENABLED=0: it then links no C library and
// starts without the dynamic loader (the net package would otherwise
// bring cgo's resolver in, and with it a few milliseconds per call).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

const usage = `Usage: %s --hook CLIENT [--agent NAME | --socket PATH] [--timeout DURATION]

Collie's tool hook for coding agents: a client's hook runs it before each
tool call, and collie setup writes it into the client's settings. It reads
the client's hook input on stdin, asks on your paired device, and prints the
client's decision: a deny on any failure. It is collie ask --hook; see
collie-agent(1).

`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet(hook.ProgramName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("hook", "", "be `CLIENT`'s tool hook ("+hook.Names()+")")
	socket := fs.String("socket", "", "ask through the agent listening at `PATH`")
	agent := fs.String("agent", "", "ask through collie-agent@`NAME` (default: $COLLIE_AGENT, or the only agent)")
	wait := fs.Duration("timeout", 0, "deny by default after `DURATION` (such as 30s, 10m); default: fits the client's hook timeout")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usage, hook.ProgramName)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "%s: "+format+"; see %s --help\n", append([]any{hook.ProgramName}, append(a, hook.ProgramName)...)...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if *name == "" {
		return bad("give --hook CLIENT, one of %s", hook.Names())
	}
	h, w, err := hook.Check(*name, *wait)
	if err != nil {
		return bad("%v", err)
	}
	e := hook.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
	// Whose hook this is, as collie decides it before every command: a
	// human's asks the agent's socket; an agent's asks the bridge, which
	// collie does; an incomplete agent environment asks nothing and
	// denies, never falling back to the human's socket.
	switch adm := loginstore.Admit(getenv); adm.Kind {
	case loginstore.Agent:
		e.Refused = execCollie(args)
	case loginstore.FailClosed:
		e.Refused = hook.FailClosed(adm.Reason)
		e.Getenv = func(string) string { return "" }
	}
	return hook.Run(ctx, e, h, *socket, *agent, w)
}

// execCollie runs collie ask --hook with args in this process's place: in
// an agent environment the question goes to the bridge over the agent's
// session. It returns only when collie cannot be run, with why.
func execCollie(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("the hook cannot find its own path to find collie: %w", err)
	}
	collie := hook.CollieFor(self)
	if collie == "" {
		return fmt.Errorf("an agent asks through collie, and no collie is installed with %s; reinstall collie", self)
	}
	err = syscall.Exec(collie, append([]string{"collie", "ask"}, args...), os.Environ())
	return fmt.Errorf("cannot run %s: %w", collie, err)
}
