package device

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The reads a device polls or follows: the whole state, one agent's
// outline, one conversation, and the change feed that says which of them
// changed (devices get deltas). Each read carries a strong ETag
// of what it returns; a device that sends it back in If-None-Match gets
// 304 and no body when nothing changed.

// State is the reply to GET /api/v1/state.
type State struct {
	// Rev is the revision of the whole state, the ETag without quotes.
	Rev    string       `json:"rev"`
	Agents []view.Agent `json:"agents"`
	// Revs are each agent's revisions: its outline and conversations.
	Revs map[string]revs `json:"revs"`
}

// AgentReply is the reply to GET /api/v1/agents/{agent}: the agent's
// outline, without its conversations' items and questions.
type AgentReply struct {
	Agent outline `json:"agent"`
	Revs  revs    `json:"revs"`
}

// AgentsReply is the reply to GET /api/v1/agents: every agent's outline,
// so a device can read the state conversation by conversation instead of
// in one piece of up to 4 MiB per agent.
type AgentsReply struct {
	Rev    string       `json:"rev"` // as in State: the ETag is the whole state's
	Agents []AgentReply `json:"agents"`
}

// ConversationReply is the reply to GET
// /api/v1/agents/{agent}/conversations/{id}: the conversation whole, or,
// for a read since a revision the bridge still holds, only what changed
// since (since.go).
type ConversationReply struct {
	Agent        string             `json:"agent"`
	Rev          int64              `json:"rev"`
	Conversation *wire.Conversation `json:"conversation,omitempty"`
	// Since is the revision Delta applies to; with Delta, the reply's
	// mark (and the Collie-Delta header's).
	Since int64                   `json:"since,omitempty"`
	Delta *wire.ConversationDelta `json:"delta,omitempty"`
}

// notModified answers 304 when the request's If-None-Match names etag,
// and otherwise sets etag on the reply to come.
func notModified(w http.ResponseWriter, r *http.Request, etag string) bool {
	w.Header().Set("ETag", etag)
	if !etagMatch(r.Header.Get("If-None-Match"), etag) {
		return false
	}
	if r.Context().Err() != nil { // revoked while it was read
		revokedMidRead(w)
		return true
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusNotModified)
	return true
}

// etagMatch reports whether an If-None-Match header names etag: "*", or a
// list of entity tags, compared weakly as RFC 9110 says for this header.
func etagMatch(header, etag string) bool {
	header = strings.TrimSpace(header)
	if header == "" {
		return false
	}
	if header == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for t := range strings.SplitSeq(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == want {
			return true
		}
	}
	return false
}

func (a *API) state(w http.ResponseWriter, r *http.Request) {
	o := a.outlook.current()
	etag := a.outlook.etag(o.rev)
	if notModified(w, r, etag) {
		return
	}
	st := State{Rev: strings.Trim(etag, `"`), Agents: o.agents, Revs: make(map[string]revs, len(o.agents))}
	for _, ag := range o.agents {
		st.Revs[ag.Name] = o.byName[ag.Name].revs()
	}
	replyRead(w, r, st)
}

// agentsRead is GET /api/v1/agents: every agent's outline.
func (a *API) agentsRead(w http.ResponseWriter, r *http.Request) {
	o := a.outlook.current()
	etag := a.outlook.etag(o.rev)
	if notModified(w, r, etag) {
		return
	}
	reply := AgentsReply{Rev: strings.Trim(etag, `"`), Agents: make([]AgentReply, 0, len(o.agents))}
	for _, ag := range o.agents {
		reply.Agents = append(reply.Agents, AgentReply{Agent: outlineOf(ag), Revs: o.byName[ag.Name].revs()})
	}
	replyRead(w, r, reply)
}

// agentRead is GET /api/v1/agents/{agent}: one agent's outline.
func (a *API) agentRead(w http.ResponseWriter, r *http.Request) {
	o := a.outlook.current()
	name := r.PathValue("agent")
	p, ok := o.byName[name]
	if !ok {
		apierr.Refuse(w, apierr.UnknownAgent, name)
		return
	}
	if notModified(w, r, a.outlook.etag(p.rev)) {
		return
	}
	for _, ag := range o.agents {
		if ag.Name == name {
			replyRead(w, r, AgentReply{Agent: outlineOf(ag), Revs: p.revs()})
			return
		}
	}
}

// conversationRead is GET /api/v1/agents/{agent}/conversations/{id}.
func (a *API) conversationRead(w http.ResponseWriter, r *http.Request) {
	o := a.outlook.current()
	name, id := r.PathValue("agent"), r.PathValue("id")
	p, ok := o.byName[name]
	if !ok {
		apierr.Refuse(w, apierr.UnknownAgent, name)
		return
	}
	c, ok := p.convs[id]
	if !ok {
		apierr.Refuse(w, apierr.NoConversation, name, id)
		return
	}
	if notModified(w, r, a.outlook.etag(c.rev)) {
		return
	}
	cur, _ := findConversation(p.snap, id)
	reply := ConversationReply{Agent: name, Rev: c.rev}
	if since := r.URL.Query().Get("since"); since != "" {
		if base, rev, ok := a.outlook.since(name, id, since); ok {
			d := wire.DiffConversation(&base, &cur)
			if d == nil {
				d = &wire.ConversationDelta{ID: id}
			}
			if worthDelta(d, &cur) {
				w.Header().Set(wire.DeltaHeader, a.outlook.etag(rev))
				reply.Since, reply.Delta = rev, d
				replyRead(w, r, reply)
				return
			}
		}
	}
	reply.Conversation = &cur
	replyRead(w, r, reply)
}

// findConversation is the first conversation with id in s.
func findConversation(s *wire.Snapshot, id string) (wire.Conversation, bool) {
	if s == nil {
		return wire.Conversation{}, false
	}
	for _, sp := range s.Spaces {
		for _, tab := range sp.Tabs {
			for _, c := range tab.Conversations {
				if c.ID == id {
					return c, true
				}
			}
		}
	}
	return wire.Conversation{}, false
}

// Event is the data of one change event of the feed.
type Event struct {
	// Rev is the revision of the whole state after the change: the
	// ETag of /api/v1/state without quotes.
	Rev string `json:"rev"`
	// All: read /api/v1/state (the first event of a stream).
	All bool `json:"all,omitempty"`
	// Changes say what changed, agent by agent.
	Changes []Change `json:"changes,omitempty"`
}

// events is the change feed: server-sent events. The first, at once, has
// "all" (read /api/v1/state); each later one says which agents and
// conversations changed since the one before, so the device reads only
// those.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		apierr.Refuse(w, apierr.NoStreaming)
		return
	}
	if a.beforeStream != nil {
		a.beforeStream()
	}
	_, s, ctx, done, ok := a.feed.enter(r.Context(), credential(r), true)
	if !ok {
		a.refuseUnpaired(w, r)
		return
	}
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	seen := a.outlook.current()
	send := func(ev Event) {
		data, _ := json.Marshal(ev) // plain strings and numbers: never fails
		fmt.Fprintf(w, "event: change\ndata: %s\n\n", data)
	}
	send(Event{Rev: strings.Trim(a.outlook.etag(seen.rev), `"`), All: true})
	fl.Flush()
	keep := time.NewTicker(25 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
			now := a.outlook.current()
			if now.rev == seen.rev {
				continue
			}
			send(Event{Rev: strings.Trim(a.outlook.etag(now.rev), `"`), Changes: diff(seen, now)})
			seen = now
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		fl.Flush()
	}
}

// epoch is a random word for this API's ETags.
func epoch() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
