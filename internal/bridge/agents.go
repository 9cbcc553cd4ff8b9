package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginapi"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/platformkey"
)

// AgentSessionsFile is the agent sessions' store in the state folder.
const AgentSessionsFile = "agent-sessions.json"

// hostedTransport is how `collie durable list` names an agent platform's
// agent session's board.
const hostedTransport = "agent-session"

// agentService opens the agent sessions' store and returns the agent
// surface the device API's listener serves; nil, logged, when
// the store cannot be opened: devices still work.
func (b *Bridge) agentService() http.Handler {
	store, err := loginservice.Open(loginservice.Options{Path: filepath.Join(b.o.Paths.State, AgentSessionsFile), Log: b.o.Log})
	if err != nil {
		b.o.Log.Error("agent login is off: " + err.Error())
		return nil
	}
	o := loginapi.Options{Store: store, Log: b.o.Log, Base: func() string { return b.apiURL }}
	switch path := b.o.Agents.PlatformKeyFile; {
	case path == "":
		o.PlatformOff = "its user has not set platform_key_file in [agents] of config.toml (collie.toml(5))"
	default:
		key, err := platformkey.Load(path)
		if err != nil {
			b.o.Log.Error("agent login is off: " + err.Error())
			o.PlatformOff = "the platform's key in [agents] platform_key_file cannot be read; its user sees why in the journal"
			break
		}
		o.Platform = loginapi.NewPlatform(key, nil)
	}
	b.host = loginhost.New(loginhost.Options{Log: b.o.Log, Attach: b.attachHosted, Detach: b.detachHosted, Live: store.WatchAgent})
	b.sessions = store
	o.Boards = b.host
	return loginapi.New(o)
}

// attachHosted shows an agent session's board: read through client like
// any durable agent, under name, and kept across reloads of sources.json.
func (b *Bridge) attachHosted(name string, client upstream.Waiter) error {
	if err := sources.CheckName(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil || b.ctx.Err() != nil {
		return errors.New("the bridge is not running")
	}
	if _, taken := b.agents[name]; taken {
		return fmt.Errorf("a durable agent in sources.json is already called %s; rename it (names starting %q are the agent sessions')", name, loginhost.Prefix)
	}
	a := b.add(sources.Source{Name: name}, client, nil)
	a.hosted = true
	a.status.Transport, a.status.Target = hostedTransport, "agent platform session"
	return nil
}

// detachHosted stops showing the board called name: its agent has no
// live session left (loginhost releases it).
func (b *Bridge) detachHosted(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a, ok := b.agents[name]; ok && a.hosted {
		b.detach(a)
		delete(b.agents, name)
	}
}

// AgentSessions implements control.AgentsBackend.
func (b *Bridge) AgentSessions() ([]control.AgentSession, error) {
	if b.sessions == nil {
		return nil, errAgentsOff
	}
	var out []control.AgentSession
	for _, c := range b.sessions.List() {
		out = append(out, control.AgentSession{
			ID: c.ID, Agent: c.Identity.Agent, Server: c.Identity.Server, App: c.Identity.App, Board: b.host.Label(c.Identity),
			Created: c.Created, Refreshed: c.Refreshed, AccessExpires: c.AccessExpires, RefreshExpires: c.RefreshExpires,
			Revoked: c.Revoked, RevokedWhy: c.RevokedWhy,
		})
	}
	return out, nil
}

// RevokeAgentSession implements control.AgentsBackend.
func (b *Bridge) RevokeAgentSession(id string) (int, error) {
	if b.sessions == nil {
		return 0, errAgentsOff
	}
	return b.sessions.RevokeAgent(strings.TrimSpace(id))
}

var errAgentsOff = errors.New("agent sessions are off: the device API does not listen, or the store could not be opened (see collie doctor and the journal)")
