package ask

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/collie-linux/collie/internal/sanitize"
	"github.com/collie-linux/collie/internal/wire"
)

// Grants runs `collie-agent grants`: list the "always allow" grants an
// agent remembers, or revoke one or all of them. Revoking only takes
// permission away, so any local program of the user may do it.
func Grants(ctx context.Context, args []string, e Env) int {
	fs := flag.NewFlagSet(e.Prog, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		socket, agent, revoke string
		all, asJSON           bool
	)
	fs.StringVar(&socket, "socket", "", "")
	fs.StringVar(&agent, "agent", "", "")
	fs.StringVar(&agent, "name", "", "")
	fs.StringVar(&revoke, "revoke", "", "")
	fs.BoolVar(&all, "revoke-all", false, "")
	fs.BoolVar(&asJSON, "json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(e.Stdout, "Usage: %s [--agent NAME | --socket PATH] [--json] [--revoke ID | --revoke-all]\n", e.Prog)
			return 0
		}
		fmt.Fprintf(e.Stderr, "%s: %v; see %s --help\n", e.Prog, err, e.Prog)
		return ExitUsage
	}
	if fs.NArg() > 0 || revoke != "" && all {
		fmt.Fprintf(e.Stderr, "%s: give --revoke ID or --revoke-all, and no other argument\n", e.Prog)
		return ExitUsage
	}
	path, err := findSocket(socket, agent, e.Getenv)
	if err != nil {
		fmt.Fprintf(e.Stderr, "%s: %v\n", e.Prog, err)
		return ExitError
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := newClient(path)
	if revoke != "" || all {
		var rep wire.RevokeReply
		if err := c.call(ctx, "POST", wire.RevokePath, wire.RevokeRequest{Grant: revoke, All: all}, &rep); err != nil {
			fmt.Fprintf(e.Stderr, "%s: %s\n", e.Prog, sanitize.TerminalLine(describeErr(err, path, e.Getenv)))
			return ExitError
		}
		fmt.Fprintf(e.Stdout, "revoked %d grant(s)\n", rep.Revoked)
		return 0
	}
	var rep wire.GrantsReply
	if err := c.call(ctx, "GET", wire.GrantsPath, nil, &rep); err != nil {
		fmt.Fprintf(e.Stderr, "%s: %s\n", e.Prog, sanitize.TerminalLine(describeErr(err, path, e.Getenv)))
		return ExitError
	}
	if asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(e.Stdout, "%s\n", sanitize.TerminalJSON(b))
		return 0
	}
	if len(rep.Grants) == 0 {
		fmt.Fprintln(e.Stdout, "no always-allow grants")
		return 0
	}
	for _, g := range rep.Grants {
		line := sanitize.TerminalLine // the grant comes from the agent (X1)
		fmt.Fprintf(e.Stdout, "%s  until %s  %s\n", line(g.ID), line(g.Expires), line(g.Scope.Text))
	}
	return 0
}
