package board

import (
	"net/http"
	"slices"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// conversation returns the conversation a write names, or its refusal.
func (b *Board) conversation(id string) (*conv, error) {
	c, ok := b.byID[id]
	if !ok {
		return nil, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget,
			"there is no conversation %q; it may have been dropped as old; reload the agent's state", id)
	}
	return c, nil
}

func (b *Board) openConversation(id string) (*conv, error) {
	c, err := b.conversation(id)
	if err != nil {
		return nil, err
	}
	if c.Closed {
		return nil, durable.Refuse(http.StatusConflict, wire.CodeClosed, "the conversation %q is closed; reopen it first", id)
	}
	return c, nil
}

// Send implements durable.App: the text becomes a message from the user in the
// conversation. collie-agent runs fixed commands that take no input, so a
// steer is recorded the same way.
func (b *Board) Send(r *wire.SendRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.openConversation(r.Conversation); err != nil {
		return wire.WriteReply{}, err
	}
	b.note(r.Conversation, "user", r.Text)
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Rename implements durable.App.
func (b *Board) Rename(r *wire.RenameRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	title, _ := sanitize.Line(r.Title, sanitize.TitleBytes)
	switch {
	case r.Space != "":
		if r.Space != b.space.ID {
			return wire.WriteReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no space %q; reload the agent's state", r.Space)
		}
		b.space.Title = title
	case r.Tab != "":
		if r.Tab != b.tab.ID {
			return wire.WriteReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no tab %q; reload the agent's state", r.Tab)
		}
		b.tab.Title = title
	default:
		c, err := b.conversation(r.Conversation)
		if err != nil {
			return wire.WriteReply{}, err
		}
		c.Title = title
	}
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Close implements durable.App: the conversation is closed and its open questions
// are withdrawn.
func (b *Board) Close(r *wire.CloseRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.conversation(r.Conversation)
	if err != nil {
		return wire.WriteReply{}, err
	}
	for len(c.open) > 0 {
		b.decide(c.open[0], wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the conversation was closed"})
	}
	c.Closed = true
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Reopen implements durable.App.
func (b *Board) Reopen(r *wire.ReopenRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.conversation(r.Conversation)
	if err != nil {
		return wire.WriteReply{}, err
	}
	c.Closed = false
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Abort implements durable.App: with a question, withdraw it; without, stop what
// runs in the conversation.
func (b *Board) Abort(r *wire.AbortRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	if _, err := b.conversation(r.Conversation); err != nil {
		b.mu.Unlock()
		return wire.WriteReply{}, err
	}
	if r.Question != "" {
		defer b.mu.Unlock()
		q, err := b.pending(r.Conversation, r.Question)
		if err != nil {
			return wire.WriteReply{}, err
		}
		b.decide(q, wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the question was withdrawn from a paired device"})
		b.changed()
		return wire.WriteReply{Conversation: r.Conversation}, nil
	}
	b.mu.Unlock()
	if b.opts.Hooks.Abort == nil || !b.opts.Hooks.Abort(r.Conversation) {
		return wire.WriteReply{}, durable.Refuse(http.StatusConflict, wire.CodeNothingRunning, "nothing is running in conversation %q", r.Conversation)
	}
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Action implements durable.App.
func (b *Board) Action(r *wire.ActionRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	known := slices.ContainsFunc(b.belt, func(x wire.Button) bool { return x.ID == r.Action })
	cv := r.Conversation
	if cv == "" {
		cv = b.opts.Main.ID
	}
	_, err := b.openConversation(cv)
	b.mu.Unlock()
	if !known || b.opts.Hooks.Action == nil {
		return wire.WriteReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no belt button %q; reload the agent's state", r.Action)
	}
	if err != nil {
		return wire.WriteReply{}, err
	}
	if err := b.opts.Hooks.Action(r.Action, cv); err != nil {
		return wire.WriteReply{}, err
	}
	return wire.WriteReply{Conversation: cv}, nil
}

// Starter implements durable.App.
func (b *Board) Starter(r *wire.StarterRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	known := slices.ContainsFunc(b.starters, func(x wire.Starter) bool { return x.ID == r.Starter })
	b.mu.Unlock()
	if !known || b.opts.Hooks.Starter == nil {
		return wire.WriteReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no starter %q; reload the agent's state", r.Starter)
	}
	cv, err := b.opts.Hooks.Starter(r.Starter)
	if err != nil {
		return wire.WriteReply{}, err
	}
	return wire.WriteReply{Conversation: cv}, nil
}
