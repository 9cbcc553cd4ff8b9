package device

import (
	"crypto/sha256"
	"encoding/json"
	"hash"
	"strconv"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// An outlook is what a device would receive at one moment, with a
// revision for each part of it, so that a device reads only what changed
// (devices get deltas). The parts are, per agent, its outline
// (status, belt, starters and where each conversation is) and each of its
// conversations.
//
// Revisions come from one counter, which moves each time the tracker sees
// any part change; a part's revision is the counter's value when it last
// changed. They never go back, so a part that changes and changes back
// still has a new revision, and a device that read the middle version
// reads it again. ETags are the revisions with the tracker's epoch, a
// random word chosen when the API starts, so a restarted bridge never
// gives an old tag to other content.
type outlook struct {
	rev    int64
	agents []view.Agent // as devices receive them: Checked left out
	byName map[string]*agentParts
}

// agentParts are one agent's parts in an outlook. Never changed once made.
type agentParts struct {
	snap   *wire.Snapshot   // what it was made from: the same pointer is the same content
	line   *wire.Lineage    // snap's lineage: what a delta did not touch is not hashed again
	status view.AgentStatus // Checked left out
	rev    int64            // when anything of the agent last changed
	head   [sha256.Size]byte
	// headRev is when the outline last changed: status, belt, starters,
	// or the places and order of conversations.
	headRev int64
	convs   map[string]convPart // by conversation id
	order   []string            // conversation ids, as the snapshot lists them
}

type convPart struct {
	sum [sha256.Size]byte
	rev int64
	// hashed says sum is the content's; a conversation a delta changed
	// gets a new revision without being hashed (see parts).
	hashed bool
}

// tracker computes outlooks from the bridge's view. The bridge never
// changes a snapshot it has handed out (a new one is a new pointer), so
// an agent whose snapshot pointer and status are the same as last time
// is not hashed again.
type tracker struct {
	view  func() []view.Agent
	epoch string

	mu   sync.Mutex
	last *outlook
	// past are each agent's latest parts, oldest first (since.go): a
	// device reads a conversation since one of their revisions.
	past map[string][]kept
	now  func() time.Time // when parts are superseded (since.go)
}

func newTracker(v func() []view.Agent, epoch string) *tracker {
	return &tracker{view: v, epoch: epoch, last: &outlook{byName: map[string]*agentParts{}}, past: map[string][]kept{}, now: time.Now}
}

// etag is the strong entity tag of revision rev.
func (t *tracker) etag(rev int64) string {
	return `"` + t.epoch + "." + strconv.FormatInt(rev, 10) + `"`
}

// current reads the bridge's view and returns its outlook: the last one
// when nothing a device receives changed.
func (t *tracker) current() *outlook {
	v := t.view()
	t.mu.Lock()
	defer t.mu.Unlock()
	prev := t.last
	next := prev.rev + 1
	out := &outlook{rev: next, agents: make([]view.Agent, 0, len(v)), byName: make(map[string]*agentParts, len(v))}
	changed := len(v) != len(prev.agents)
	for i, a := range v {
		a.Checked = time.Time{} // moves at every poll: not something that changed
		if _, dup := out.byName[a.Name]; dup {
			continue // the bridge's names are unique; never shown twice
		}
		old := prev.byName[a.Name]
		p := old
		if old == nil || old.snap != a.Snapshot || old.status != a.AgentStatus {
			p = parts(a, old, next)
			t.remember(a.Name, p)
		}
		if old == nil || p.rev != old.rev || i >= len(prev.agents) || prev.agents[i].Name != a.Name {
			changed = true
		}
		out.agents = append(out.agents, a)
		out.byName[a.Name] = p
	}
	t.prune(out)
	if !changed {
		// The same content, perhaps in new snapshots: keep the revision,
		// and the new pointers, so they are not hashed again.
		out.rev = prev.rev
	}
	t.last = out
	return out
}

// parts hashes agent a and gives each part that differs from old the
// revision rev; the others keep theirs, so the result's rev is old's
// when nothing differs.
func parts(a view.Agent, old *agentParts, rev int64) *agentParts {
	p := &agentParts{snap: a.Snapshot, line: a.Lineage, status: a.AgentStatus, convs: map[string]convPart{}}
	p.head = headSum(a)
	sums := map[string]hash.Hash{}
	// Along snapshot deltas (a.Lineage), a conversation no delta touched
	// since old's snapshot keeps its part, and one a delta touched gets a
	// new revision without being hashed: the cost of the change, not of
	// the conversation. Otherwise each is hashed and compared.
	byDelta := old != nil && a.Lineage.Since(old.line)
	reused := map[string]bool{}
	if a.Snapshot != nil {
		for _, sp := range a.Snapshot.Spaces {
			for _, tab := range sp.Tabs {
				for i := range tab.Conversations {
					c := &tab.Conversations[i]
					if reused[c.ID] {
						continue
					}
					h, ok := sums[c.ID]
					if !ok {
						if prev, had := old.conv(c.ID); had && byDelta && a.Lineage.Unchanged(old.line, c.ID) {
							p.convs[c.ID] = prev
							reused[c.ID] = true
							p.order = append(p.order, c.ID)
							continue
						}
						h = sha256.New()
						sums[c.ID] = h
						p.order = append(p.order, c.ID)
					}
					if !byDelta {
						json.NewEncoder(h).Encode(c) // a hash's Write never fails
					}
				}
			}
		}
	}
	p.headRev = rev
	if old != nil && old.head == p.head {
		p.headRev = old.headRev
	}
	p.rev = p.headRev
	for _, cp := range p.convs {
		p.rev = max(p.rev, cp.rev)
	}
	for id, h := range sums {
		cp := convPart{rev: rev, hashed: !byDelta}
		if cp.hashed {
			h.Sum(cp.sum[:0])
			if prev, ok := old.conv(id); ok && prev.hashed && prev.sum == cp.sum {
				cp.rev = prev.rev
			}
		}
		p.convs[id] = cp
		p.rev = max(p.rev, cp.rev)
	}
	// A conversation that went changes the outline (its place is gone),
	// so p.rev is new whenever anything is.
	return p
}

func (p *agentParts) conv(id string) (convPart, bool) {
	if p == nil {
		return convPart{}, false
	}
	c, ok := p.convs[id]
	return c, ok
}

// outline is an agent as the outline read shows it: its status, belt and
// starters, and where each conversation is, by id, without its items and
// questions.
type outline struct {
	view.AgentStatus
	Snapshot *outlineSnapshot `json:"snapshot,omitempty"`
}

type outlineSnapshot struct {
	Spaces   []outlineSpace `json:"spaces"`
	Belt     []wire.Button  `json:"belt,omitempty"`
	Starters []wire.Starter `json:"starters,omitempty"`
}

type outlineSpace struct {
	ID    string       `json:"id"`
	Title string       `json:"title"`
	Tabs  []outlineTab `json:"tabs"`
}

type outlineTab struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Conversations []string `json:"conversations"` // ids
}

func outlineOf(a view.Agent) outline {
	o := outline{AgentStatus: a.AgentStatus}
	o.Checked = time.Time{}
	if a.Snapshot == nil {
		return o
	}
	s := &outlineSnapshot{Spaces: []outlineSpace{}, Belt: a.Snapshot.Belt, Starters: a.Snapshot.Starters}
	for _, sp := range a.Snapshot.Spaces {
		os := outlineSpace{ID: sp.ID, Title: sp.Title, Tabs: []outlineTab{}}
		for _, tab := range sp.Tabs {
			ot := outlineTab{ID: tab.ID, Title: tab.Title, Conversations: []string{}}
			for _, c := range tab.Conversations {
				ot.Conversations = append(ot.Conversations, c.ID)
			}
			os.Tabs = append(os.Tabs, ot)
		}
		s.Spaces = append(s.Spaces, os)
	}
	o.Snapshot = s
	return o
}

// headSum hashes the outline of a: what changes it is an outline change.
func headSum(a view.Agent) [sha256.Size]byte {
	h := sha256.New()
	json.NewEncoder(h).Encode(outlineOf(a))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Change is one agent's entry in a change event of the feed.
type Change struct {
	Agent string `json:"agent"`
	// Gone: the agent was detached; drop it.
	Gone bool `json:"gone,omitempty"`
	// Outline is the outline's new revision when it changed (the agent is
	// new, or its status, belt, starters or the places of its
	// conversations changed): read GET /api/v1/agents/{agent}.
	Outline int64 `json:"outline,omitempty"`
	// Conversations changed or new, with their revisions: read each with
	// GET /api/v1/agents/{agent}/conversations/{id}.
	Conversations []ConvRev `json:"conversations,omitempty"`
	// Removed conversations: drop them.
	Removed []string `json:"removed,omitempty"`
}

// ConvRev is a conversation's id and revision.
type ConvRev struct {
	ID  string `json:"id"`
	Rev int64  `json:"rev"`
}

// diff lists what changed from a to b, agent by agent in b's order, then
// the agents that went.
func diff(a, b *outlook) []Change {
	var out []Change
	for _, ag := range b.agents {
		np := b.byName[ag.Name]
		op := a.byName[ag.Name]
		if op == np || (op != nil && op.rev == np.rev) {
			continue
		}
		ch := Change{Agent: ag.Name}
		if op == nil || op.headRev != np.headRev {
			ch.Outline = np.headRev
		}
		for _, id := range np.order {
			c := np.convs[id]
			if o, ok := op.conv(id); !ok || o.rev != c.rev {
				ch.Conversations = append(ch.Conversations, ConvRev{id, c.rev})
			}
		}
		if op != nil {
			for _, id := range op.order {
				if _, ok := np.convs[id]; !ok {
					ch.Removed = append(ch.Removed, id)
				}
			}
		}
		out = append(out, ch)
	}
	for _, ag := range a.agents {
		if _, ok := b.byName[ag.Name]; !ok {
			out = append(out, Change{Agent: ag.Name, Gone: true})
		}
	}
	return out
}

// revs are an agent's revisions, as the reads show them.
type revs struct {
	Outline       int64            `json:"outline"`
	Conversations map[string]int64 `json:"conversations"`
}

func (p *agentParts) revs() revs {
	r := revs{Outline: p.headRev, Conversations: make(map[string]int64, len(p.convs))}
	for id, c := range p.convs {
		r.Conversations[id] = c.rev
	}
	return r
}
