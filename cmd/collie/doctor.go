package main

import (
	"context"

	"github.com/collie-linux/collie/internal/bridge/doctor"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/cli/version"
)

// cmdDoctor checks the installation, one row per check with the fix for
// every row that is not ok (L4), and fails when a row fails.
func cmdDoctor(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie doctor", e)
	asJSON := fs.Bool("json", false, "print JSON")
	var only cli.Strings
	fs.Var(&only, "check", "run only the check `NAME`; give it again for more checks")
	if err := parse(fs, args); err != nil {
		return err
	}
	rows, err := doctor.Run(ctx, doctor.FromSystem(e.getenv, version.String()), only...)
	if err != nil {
		return usagef("%v", err)
	}
	if *asJSON {
		err = doctor.WriteJSON(e.stdout, rows)
	} else {
		err = doctor.WriteText(e.stdout, rows)
	}
	if err != nil {
		return err
	}
	switch n := doctor.Failed(rows); n {
	case 0:
		return nil
	case 1:
		return hint.New("1 check failed", "run the fix shown under it, then collie doctor again")
	default:
		return hint.Errorf("run the fix shown under each, then collie doctor again", "%d checks failed", n)
	}
}
