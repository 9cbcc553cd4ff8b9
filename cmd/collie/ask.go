package main

import (
	"context"
	"os"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// cmdAsk is `collie ask`, the same command as `collie-agent ask` (the code
// is shared in internal/agent/ask, its usage too). Its exit status carries the
// answer (0 yes, 1 no, 3 timed out, 4 withdrawn, 5 could not ask):
// ask.Run returns the decision as an error, and the CLI core's exit
// table (cli.ExitCode) maps it.
func cmdAsk(ctx context.Context, e *env, args []string) error {
	ae := ask.Env{Stdin: os.Stdin, Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv, Prog: "collie ask"}
	switch e.admission.Kind {
	case loginstore.FailClosed:
		// Never the human's socket: a question cannot be asked at all, and
		// a Claude Code hook must still print its deny (exit 0).
		ae.Refused = failClosed(e.admission.Reason)
	case loginstore.Agent:
		// An agent asks its human through the bridge's agent API, with its
		// own session, not a desk socket.
		ae.Remote = e.agentClient().HTTPClient()
	}
	return ask.Run(ctx, args, ae)
}
