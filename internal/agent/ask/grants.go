package ask

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Grants runs `collie-agent grants`: list the "always allow" grants an
// agent remembers, or revoke one or all of them. Revoking only takes
// permission away, so any local program of the user may do it. Its
// errors are Run's: a cli.UsageError, or Unasked when the agent cannot
// be found, reached, or refuses.
func Grants(ctx context.Context, args []string, e Env) error {
	fs := flag.NewFlagSet(e.Prog, flag.ContinueOnError)
	var (
		socket, agent, revoke string
		all, asJSON           bool
	)
	fs.StringVar(&socket, "socket", "", "ask the agent listening at `PATH`")
	fs.StringVar(&agent, "agent", "", "ask collie-agent@`NAME` (default: $COLLIE_AGENT, or the only agent)")
	fs.StringVar(&agent, "name", "", "the same as --agent `NAME`")
	fs.StringVar(&revoke, "revoke", "", "revoke the grant `ID`")
	fs.BoolVar(&all, "revoke-all", false, "revoke every grant")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	see := "see " + e.Prog + " --help"
	rest, err := cli.Parse(fs, args, func() {
		cli.WriteUsage(e.Stdout, []string{e.Prog + " [--agent NAME | --socket PATH] [--json] [--revoke ID | --revoke-all]"},
			`List the "always allow" grants the agent remembers, or revoke them.`, fs)
	})
	if err != nil {
		if cli.IsUsage(err) {
			return &cli.UsageError{Err: hint.Wrap(errors.Unwrap(err), see)}
		}
		return err
	}
	if len(rest) > 0 || revoke != "" && all {
		return &cli.UsageError{Err: hint.New("give --revoke ID or --revoke-all, and no other argument", see)}
	}
	path, err := hook.FindSocket(socket, agent, e.Getenv)
	if err != nil {
		return &Unasked{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	he := e.hook()
	c := he.ClientFor(path)
	if revoke != "" || all {
		var rep wire.RevokeReply
		if err := c.Call(ctx, "POST", wire.RevokePath, wire.RevokeRequest{Grant: revoke, All: all}, &rep); err != nil {
			return &Unasked{Err: errors.New(sanitize.TerminalLine(he.DescribeErr(err, path)))}
		}
		fmt.Fprintf(e.Stdout, "revoked %d grant(s)\n", rep.Revoked)
		return nil
	}
	var rep wire.GrantsReply
	if err := c.Call(ctx, "GET", wire.GrantsPath, nil, &rep); err != nil {
		return &Unasked{Err: errors.New(sanitize.TerminalLine(he.DescribeErr(err, path)))}
	}
	if asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(e.Stdout, "%s\n", sanitize.TerminalJSON(b))
		return nil
	}
	if len(rep.Grants) == 0 {
		fmt.Fprintln(e.Stdout, "no always-allow grants")
		return nil
	}
	for _, g := range rep.Grants {
		line := sanitize.TerminalLine // the grant comes from the agent (X1)
		fmt.Fprintf(e.Stdout, "%s  until %s  %s\n", line(g.ID), line(g.Expires), line(g.Scope.Text))
	}
	return nil
}
