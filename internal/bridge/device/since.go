package device

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Reads since a revision. A device that holds a conversation names the
// ETag it holds (GET …/conversations/{id}?since=ETAG) and gets only what
// changed since, as a wire.ConversationDelta: the form of a conversation's
// change in an agent's snapshot delta (collie-durable(7)), applied the
// same way. A streaming transcript then costs the bridge and the device
// the change, not the conversation, at each read. The bridge answers with
// the whole conversation when it no longer holds that revision, or when
// the delta would hardly be smaller.

// keptVersions is how many of an agent's latest parts the tracker keeps
// for reads since a revision, and keptFor how long it keeps one after a
// newer came. A page reads each change as the feed tells it, within a
// second, so it is rarely more than a change or two behind; one further
// back, or back from sleep, reads whole.
const (
	keptVersions = 4
	keptFor      = 30 * time.Second
)

// kept is one of an agent's parts the tracker keeps, and when a newer one
// came (zero for the newest).
type kept struct {
	p    *agentParts
	gone time.Time
}

// remember records p, agent name's new parts (t.mu held). Along snapshot
// deltas the kept snapshots share all but what changed (a list a delta
// changed in place is a copy of its element headers, about 100 bytes an
// item). A whole read shares nothing with the one before, so across one
// only the parts just before it are kept: a device reading since them pays
// one change, and the bridge holds at most two copies of the agent's
// state, for keptFor. Parts whose revisions are all the same as the last
// kept (the same content in a new snapshot) take their place.
func (t *tracker) remember(name string, p *agentParts) {
	h := t.past[name]
	now := t.now()
	if n := len(h); n > 0 {
		switch last := h[n-1]; {
		case last.p.rev == p.rev:
			h = h[:n-1]
		case !p.line.Since(last.p.line):
			h = h[n-1:]
		}
	}
	if len(h) >= keptVersions {
		h = h[len(h)-keptVersions+1:]
	}
	// A new list each time: nothing dropped stays reachable from it.
	next := make([]kept, 0, len(h)+1)
	for _, k := range h {
		if k.gone.IsZero() {
			k.gone = now
		}
		next = append(next, k)
	}
	t.past[name] = append(next, kept{p: p})
}

// prune drops the kept parts of agents not in o and those superseded more
// than keptFor ago (t.mu held).
func (t *tracker) prune(o *outlook) {
	now := t.now()
	for name, h := range t.past {
		if _, ok := o.byName[name]; !ok {
			delete(t.past, name)
			continue
		}
		if len(h) > 1 && now.Sub(h[0].gone) > keptFor {
			i := 0
			for i < len(h)-1 && now.Sub(h[i].gone) > keptFor {
				i++
			}
			t.past[name] = slices.Clone(h[i:])
		}
	}
}

// since finds conversation id of agent name at the revision the ETag tag
// names, among the parts the tracker keeps. tag may be quoted, as the
// ETag header gives it, or not; one of another run of the bridge (another
// epoch), malformed, or too old is not found.
func (t *tracker) since(name, id, tag string) (wire.Conversation, int64, bool) {
	rev, ok := t.parseTag(tag)
	if !ok {
		return wire.Conversation{}, 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h, now := t.past[name], t.now()
	for i := len(h) - 1; i >= 0; i-- {
		if !h[i].gone.IsZero() && now.Sub(h[i].gone) > keptFor {
			break
		}
		if c, ok := h[i].p.convs[id]; ok && c.rev == rev {
			// One revision is one content (outlook.go), so any parts
			// that have it will do.
			conv, ok := findConversation(h[i].p.snap, id)
			return conv, rev, ok
		}
	}
	return wire.Conversation{}, 0, false
}

// parseTag reads the revision from one of this tracker's ETags, quoted
// or not, weak or strong (a page may keep either form).
func (t *tracker) parseTag(tag string) (int64, bool) {
	if len(tag) >= 2 && tag[len(tag)-1] == '"' {
		tag = strings.TrimPrefix(tag, "W/")
		if len(tag) < 2 || tag[0] != '"' {
			return 0, false
		}
		tag = tag[1 : len(tag)-1]
	}
	ep, num, ok := strings.Cut(tag, ".")
	if !ok || ep != t.epoch {
		return 0, false
	}
	rev, err := strconv.ParseInt(num, 10, 64)
	// Only the tag's own spelling: no sign, no leading zeros.
	return rev, err == nil && rev > 0 && strconv.FormatInt(rev, 10) == num
}

// worthDelta reports whether d, the change of conversation c since a
// revision, is smaller than c: it leaves out more items and questions than
// it removes (each left out is at least its id and kind; each removal is
// an id).
func worthDelta(d *wire.ConversationDelta, c *wire.Conversation) bool {
	left := len(c.Items) + len(c.Questions) - len(d.Items) - len(d.Questions)
	return left > len(d.RemoveItems)+len(d.RemoveQuestions)
}
