package board

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Ask implements durable.App.
func (b *Board) Ask(ctx context.Context, r *wire.AskRequest, wait time.Duration) (wire.AskReply, error) {
	b.mu.Lock()
	q, existing := b.byRequest[r.RequestID]
	if !existing && r.ToolCall != "" {
		q, existing = b.byKey[r.ToolCall]
	}
	if existing && q.orphaned {
		existing = false // nobody saw its answer: ask again
	}
	if existing && q.reply.Status != wire.StatusPending && q.req != nil && r.RequestID != q.req.RequestID && !sameWording(q.req, r) {
		// D9 decides a tool call once, and the decision was made on this
		// wording: under the same key with other wording (another
		// command) it is another call, and a yes must not carry over to
		// it. Ask again.
		existing = false
	}
	switch {
	case existing:
		// D9: the tool call was asked about before; if its wording changed
		// while it waits, the device must see the new wording before a
		// tap can count.
		if q.reply.Status == wire.StatusPending && q.req != nil && !sameWording(q.req, r) && r.RequestID != q.req.RequestID {
			w := b.cleanWording(r, q)
			if w.title != q.q.Title || w.rationale != q.q.Rationale || w.shortened != q.q.Shortened || w.detail != q.q.Detail {
				q.q.Title, q.q.Rationale, q.q.Shortened, q.q.Detail = w.title, w.rationale, w.shortened, w.detail
				q.q.Revision++
				b.changed()
			}
		}
	default:
		cv := b.opts.Main.ID
		if r.Conversation != "" {
			cv = r.Conversation
		}
		if _, err := b.openConversation(cv); err != nil {
			b.mu.Unlock()
			return wire.AskReply{}, err
		}
		if g, ok := b.grantFor(r); ok {
			q = b.newQuestion(cv, r, true)
			b.decide(q, wire.AskReply{Status: wire.StatusAnswered, OptionIDs: []string{wire.Yes}, Grant: g.ID,
				Reason: "allowed by the always-allow grant " + g.ID + ": " + g.Scope.Text})
		} else {
			q = b.newQuestion(cv, r, true)
			b.log.Info("question asked", "question", q.q.ID, "kind", q.q.Kind, "tool_call", q.q.ToolCall, "timeout_s", r.TimeoutSeconds)
		}
		b.changed()
	}
	q.waiters++
	q.lastPoll = time.Now()
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	q.waiters--
	q.lastPoll = time.Now()
	rep := q.reply
	rep.Existing = existing
	rep.OptionIDs = slices.Clone(rep.OptionIDs)
	rep.Values = maps.Clone(rep.Values)
	return rep, nil
}

func sameWording(a, b *wire.AskRequest) bool {
	return a.Title == b.Title && a.Rationale == b.Rationale && a.Shortened == b.Shortened && a.Detail == b.Detail
}

// grantFor finds a grant that lets r through unasked; b.mu held.
func (b *Board) grantFor(r *wire.AskRequest) (wire.Grant, bool) {
	if r.Kind != wire.AskYesNo || r.Tool == nil {
		return wire.Grant{}, false
	}
	return b.grants.Match(*r.Tool, time.Now())
}
