package board

import (
	"net/http"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// LocalOpen implements durable.LocalApp: a new open conversation, marked
// as a local program's so that LocalClose may close it.
func (b *Board) LocalOpen(r *wire.LocalOpenRequest) (wire.LocalReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var id string
	for {
		id = b.nextID("local-")
		if _, ok := b.byID[id]; !ok {
			break
		}
	}
	title, _ := sanitize.Line(r.Title, sanitize.TitleBytes)
	c := &conv{Conversation: wire.Conversation{ID: id, Title: title}, local: true}
	b.convs = append(b.convs, c)
	b.byID[id] = c
	b.trim()
	b.changed()
	b.log.Info("conversation opened by a local program", "conversation", id)
	return wire.LocalReply{Conversation: id}, nil
}

// LocalNote implements durable.LocalApp: the text is the agent's message
// in an open conversation. It answers nothing.
func (b *Board) LocalNote(r *wire.LocalNoteRequest) (wire.LocalReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.openConversation(r.Conversation); err != nil {
		return wire.LocalReply{}, err
	}
	b.note(r.Conversation, "agent", r.Text)
	b.changed()
	return wire.LocalReply{Conversation: r.Conversation}, nil
}

// LocalClose implements durable.LocalApp: only a conversation LocalOpen
// opened is closed; its open questions are withdrawn. Closing one that is
// closed already is no error.
func (b *Board) LocalClose(r *wire.LocalCloseRequest) (wire.LocalReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.conversation(r.Conversation)
	if err != nil {
		return wire.LocalReply{}, err
	}
	if !c.local {
		return wire.LocalReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget,
			"no conversation a local program opened is %q; only a paired device may close the agent's own", r.Conversation)
	}
	for len(c.open) > 0 {
		b.decide(c.open[0], wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the program that asked ended its session"})
	}
	c.Closed = true
	b.changed()
	return wire.LocalReply{Conversation: r.Conversation}, nil
}

// Withdraw implements durable.LocalApp: the open question asked with the
// request id is withdrawn at once; a decided one keeps its decision, which
// the reply carries.
func (b *Board) Withdraw(r *wire.WithdrawRequest) (wire.AskReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q, ok := b.byRequest[r.RequestID]
	if !ok {
		return wire.AskReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownQuestion,
			"no question was asked with the request id %q, or it was decided long ago", r.RequestID)
	}
	if q.reply.Status == wire.StatusPending {
		b.decide(q, wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the program that asked stopped waiting"})
		b.changed()
	}
	return q.reply, nil
}
