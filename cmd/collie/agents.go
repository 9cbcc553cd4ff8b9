package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// cmdAgentsList lists the agent platform's agent sessions the bridge
// remembers: never a token.
func cmdAgentsList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie agents list", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	list, err := control.NewClient(paths.Control()).AgentSessions(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []control.AgentSession{}
		}
		return writeJSON(e.stdout, list)
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no agent has logged in; an agent on an agent platform logs in with: collie login --url BASE (docs/agent-login.md)")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tSERVER\tSHOWN AS\tLOGGED IN\tSTATE")
	for _, s := range list {
		state := "live until " + s.RefreshExpires.Local().Format(time.DateTime)
		if !s.Revoked.IsZero() {
			state = "revoked " + s.Revoked.Local().Format(time.DateTime) + ": " + s.RevokedWhy
		} else if time.Now().After(s.RefreshExpires) {
			state = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sanitize.TerminalLine(s.ID), sanitize.TerminalLine(s.Agent), sanitize.TerminalLine(s.Server),
			sanitize.TerminalLine(s.Board), s.Created.Local().Format(time.DateTime), sanitize.TerminalLine(state))
	}
	return tw.Flush()
}

// cmdAgentsRevoke revokes an agent's sessions at once, by session id or
// agent id: its tokens stop working; it must log in again.
func cmdAgentsRevoke(ctx context.Context, e *env, args []string) error {
	ids, err := parseArgs(newFlags("collie agents revoke", e), args, 0, -1)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return &cli.UsageError{Err: hint.New("give the session's or the agent's id: collie agents revoke ID", "collie agents list shows them")}
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	n, err := control.NewClient(paths.Control()).RevokeAgentSession(ctx, ids[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked %d session(s) of %s; its tokens stop working now, and it must run collie login again\n", n, sanitize.TerminalLine(ids[0]))
	return nil
}
