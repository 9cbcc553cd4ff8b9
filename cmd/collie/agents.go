package main

import (
	"context"
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
)

// cmdAgentsList lists the agent platform's agent sessions the bridge
// remembers: never a token.
func cmdAgentsList(ctx context.Context, e *env, args []string) error {
	return list[control.AgentSession]{
		name: "collie agents list",
		fetch: func(ctx context.Context, _ *env, paths config.Paths) ([]control.AgentSession, error) {
			return control.NewClient(paths.Control()).AgentSessions(ctx)
		},
		empty:   "no agent has logged in; an agent on an agent platform logs in with: collie login --url BASE (docs/agent-login.md)",
		columns: []string{"ID", "AGENT", "SERVER", "SHOWN AS", "LOGGED IN", "STATE"},
		row: func(s control.AgentSession) []string {
			state := "live until " + s.RefreshExpires.Local().Format(time.DateTime)
			if !s.Revoked.IsZero() {
				state = "revoked " + s.Revoked.Local().Format(time.DateTime) + ": " + s.RevokedWhy
			} else if time.Now().After(s.RefreshExpires) {
				state = "expired"
			}
			return []string{s.ID, s.Agent, s.Server, s.Board, s.Created.Local().Format(time.DateTime), state}
		},
	}.run(ctx, e, args)
}

// cmdAgentsRevoke revokes an agent's sessions at once, by session id or
// agent id: its tokens stop working; it must log in again.
func cmdAgentsRevoke(ctx context.Context, e *env, args []string) error {
	id, said, paths, err := daemonOne(e, "collie agents revoke", args, "give the session's or the agent's id", "collie agents list shows them")
	if err != nil {
		return err
	}
	n, err := control.NewClient(paths.Control()).RevokeAgentSession(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "revoked %d session(s) of %s; its tokens stop working now, and it must run collie login again\n", n, said)
	return nil
}
