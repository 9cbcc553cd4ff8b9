package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginclient"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// admit decides, before any command runs, whose collie this is (R4): with
// none of the agent markers set it is the human's, and runs as it always
// did; in an agent environment only the commands the table marks agents
// or anywhere run (R3), and they see no variable but the markers, so
// nothing of the host user's HOME, XDG folders, config, sources, control
// socket or COLLIE_TOKEN* reaches them; an incomplete agent environment
// runs nothing that authenticates (only those marked anywhere: help,
// version, whoami, which says why, and ask, which refuses itself).
func (e *env) admit(c *command) error {
	e.admission = loginstore.Admit(e.getenv)
	switch e.admission.Kind {
	case loginstore.Human:
		return nil
	case loginstore.Agent:
		markers := e.getenv
		e.getenv = func(k string) string {
			switch k {
			case loginstore.MarkerTransportDir, loginstore.MarkerHome, loginstore.MarkerAgentID:
				return markers(k)
			}
			return ""
		}
		if c.who == human {
			return hint.Errorf("run it on the bridge's host as its user; an agent asks through collie ask",
				"collie %s is the human's command; in an agent environment collie runs only login, logout, whoami and ask", c.name)
		}
		return nil
	}
	e.getenv = func(string) string { return "" }
	if c.who == anywhere { // ask refuses with the reason itself: exit 5, and its hook denies
		return nil
	}
	return failClosed(e.admission.Reason)
}

// failClosed is the error of every command in an incomplete agent
// environment.
func failClosed(reason string) error { return hook.FailClosed(reason) }

// agentClient is the agent login client of an admitted agent.
func (e *env) agentClient() *loginclient.Client {
	c := loginclient.New(e.admission.Env)
	c.Environ = os.Environ()
	return c
}

func cmdLogin(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie login", e)
	base := fs.String("url", "", "the bridge's address: https://HOST[:PORT], or http://127.0.0.1:PORT")
	caFile := fs.String("ca-file", "", "a PEM `file` with the bridge's certificate (or its CA) to trust besides the system's")
	if err := parse(fs, args); err != nil {
		return err
	}
	if e.admission.Kind == loginstore.Human {
		return hint.New("collie login is for an AI agent on an agent platform, and no agent environment is set (SLOCK_CLI_TRANSPORT_DIR, SLOCK_HOME, SLOCK_AGENT_ID)",
			"a person pairs a phone or browser with collie pair instead")
	}
	if *base == "" {
		return usagef("give the bridge's address with --url https://HOST[:PORT]")
	}
	b, err := loginclient.CheckBase(*base)
	if err != nil {
		return &cli.UsageError{Err: err}
	}
	c := e.agentClient()
	if *caFile != "" {
		if c.CA, err = loginclient.ReadCA(*caFile); err != nil {
			return &cli.UsageError{Err: err}
		}
	}
	rec, err := c.Login(ctx, b)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "logged in: agent %s, service %s, bridge %s\naccess token expires %s; refreshed automatically\n",
		e.admission.Env.AgentID, loginclient.Service, rec.APIBase, rec.AccessExpiresAt)
	return nil
}

func cmdLogout(ctx context.Context, e *env, args []string) error {
	if err := parse(newFlags("collie logout", e), args); err != nil {
		return err
	}
	if e.admission.Kind == loginstore.Human {
		return hint.New("collie logout is for an AI agent on an agent platform, and no agent environment is set",
			"a person cuts a device off with collie devices revoke ID")
	}
	res, err := e.agentClient().Logout(ctx)
	if err != nil {
		return err
	}
	switch {
	case !res.Removed:
		fmt.Fprintln(e.stdout, "not logged in: no collie session was stored for this agent")
	case res.Revoke != nil:
		fmt.Fprintf(e.stdout, "logged out here: the session is removed from this agent's home\n")
		fmt.Fprintf(e.stderr, "collie: warning: the bridge could not be told to revoke the session (%v); its tokens stay valid there until they expire, or until the human runs collie agents revoke\n", res.Revoke)
	default:
		fmt.Fprintln(e.stdout, "logged out: the session is removed and the bridge revoked it")
	}
	return nil
}

// whoamiJSON is collie whoami --json.
type whoamiJSON struct {
	Kind             string  `json:"kind"` // human, agent, fail_closed
	Reason           string  `json:"reason,omitempty"`
	AgentID          string  `json:"agent_id,omitempty"`
	Service          string  `json:"service,omitempty"`
	APIBase          string  `json:"api_base,omitempty"`
	AccessExpiresAt  string  `json:"access_expires_at,omitempty"`
	RefreshExpiresAt *string `json:"refresh_expires_at,omitempty"`
}

// cmdWhoami says who collie runs as, from the store alone: no network.
func cmdWhoami(_ context.Context, e *env, args []string) error {
	fs := newFlags("collie whoami", e)
	asJSON := fs.Bool("json", false, "print it as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	out := whoamiJSON{Kind: e.admission.Kind.String()}
	switch e.admission.Kind {
	case loginstore.Human:
		if *asJSON {
			return writeJSON(e.stdout, out)
		}
		fmt.Fprintln(e.stdout, "human: no agent environment is set; collie works with the bridge on this host (collie pair, collie show)")
		return nil
	case loginstore.FailClosed:
		return failClosed(e.admission.Reason)
	}
	rec, ok := loginstore.Read(e.admission.Env, loginclient.Service)
	if !ok {
		return hint.New("agent "+e.admission.Env.AgentID+" has no collie session", "run `collie login --url BASE` with the bridge's address")
	}
	out.AgentID, out.Service, out.APIBase = e.admission.Env.AgentID, loginclient.Service, rec.APIBase
	out.AccessExpiresAt, out.RefreshExpiresAt = rec.AccessExpiresAt, rec.RefreshExpiresAt
	now := time.Now()
	if *asJSON {
		if err := writeJSON(e.stdout, out); err != nil {
			return err
		}
		return sessionOver(rec, now)
	}
	refresh := "no expiry given"
	if t, ok := rec.RefreshExpiry(); ok {
		refresh = *rec.RefreshExpiresAt + " (" + relative(now, t) + ")"
	}
	fmt.Fprintf(e.stdout, "agent:           %s\nservice:         %s\nbridge:          %s\naccess expires:  %s (%s)\nrefresh expires: %s\n",
		out.AgentID, out.Service, out.APIBase, rec.AccessExpiresAt, relative(now, rec.AccessExpiry()), refresh)
	return sessionOver(rec, now)
}

// sessionOver is the error of a stored session that can no longer be
// refreshed: its refresh token expired. whoami shows it, and exits 1.
func sessionOver(rec loginstore.Record, now time.Time) error {
	if t, ok := rec.RefreshExpiry(); ok && !t.After(now) {
		return hint.New("the agent session's refresh token expired", loginclient.LoginHint(rec.APIBase))
	}
	return nil
}

// relative is "in 14m0s" or "expired 3s ago".
func relative(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	if d > 0 {
		return "in " + d.String()
	}
	return "expired " + (-d).String() + " ago"
}
