package control

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// AgentSession is an agent platform's agent session as `collie agents
// list` shows it: never a token.
type AgentSession struct {
	ID             string    `json:"id"`
	Agent          string    `json:"agent"`
	Server         string    `json:"server"`
	App            string    `json:"app"`
	Board          string    `json:"board"` // the name its questions are shown under
	Created        time.Time `json:"created"`
	Refreshed      time.Time `json:"refreshed,omitzero"`
	AccessExpires  time.Time `json:"accessExpires"`
	RefreshExpires time.Time `json:"refreshExpires"`
	Revoked        time.Time `json:"revoked,omitzero"`
	RevokedWhy     string    `json:"revokedWhy,omitempty"`
}

// AgentsBackend is a Backend that serves agent sessions (the bridge).
type AgentsBackend interface {
	AgentSessions() ([]AgentSession, error)
	// RevokeAgentSession revokes the live sessions whose id or agent id
	// is id, and says how many.
	RevokeAgentSession(id string) (int, error)
}

// Paths of the agent session routes.
const (
	agentSessionsPath = "/v1/agent-sessions"
	agentRevokePath   = "/v1/agent-sessions/revoke"
)

func serveAgents(mux *http.ServeMux, b Backend) {
	ab, ok := b.(AgentsBackend)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+agentSessionsPath, func(w http.ResponseWriter, _ *http.Request) {
		s, err := ab.AgentSessions()
		reply(w, s, err)
	})
	mux.HandleFunc("POST "+agentRevokePath, func(w http.ResponseWriter, r *http.Request) {
		if id, ok := readID(w, r); ok {
			n, err := ab.RevokeAgentSession(id)
			reply(w, struct {
				Revoked int `json:"revoked"`
			}{n}, err)
		}
	})
}

// AgentSessions lists the agent sessions the bridge remembers.
func (c *Client) AgentSessions(ctx context.Context) ([]AgentSession, error) {
	var s []AgentSession
	return s, c.do(ctx, http.MethodGet, agentSessionsPath, &s)
}

// RevokeAgentSession revokes an agent's sessions (by session id or agent
// id) and says how many.
func (c *Client) RevokeAgentSession(ctx context.Context, id string) (int, error) {
	body, _ := json.Marshal(map[string]string{"id": id})
	var out struct {
		Revoked int `json:"revoked"`
	}
	return out.Revoked, c.doBody(ctx, http.MethodPost, agentRevokePath, body, &out)
}
