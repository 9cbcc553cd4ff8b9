package main

import (
	"context"
	"os"

	"github.com/collie-linux/collie/internal/ask"
)

// cmdAsk is `collie ask`, the same command as `collie-agent ask` (the code
// is shared in internal/ask). Its exit status carries the answer (0 yes, 1
// no, 3 timed out, 4 withdrawn, 5 could not ask), which the usual error
// path of collie cannot express, so it exits here with that status.
func cmdAsk(ctx context.Context, e *env, args []string) error {
	code := ask.Main(ctx, args, ask.Env{Stdin: os.Stdin, Stdout: e.stdout, Stderr: e.stderr, Getenv: e.getenv, Prog: "collie ask"})
	if code != 0 {
		os.Exit(code)
	}
	return nil
}
