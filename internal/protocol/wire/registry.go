package wire

import (
	"errors"
	"fmt"
)

// The registry: each write of protocol v1 described once. The device API
// takes its routes from it, the agent its routes and request types, the
// audit log its events, and the caller check its list (C2). A new write is
// a request type with the methods of WriteRequest, and one row here.

// Names of the writes: the last part of the device API's route
// POST /api/v1/agents/{agent}/NAME, and what WriteRequest.Name returns.
const (
	AnswerWrite  = "answer"
	SendWrite    = "send"
	AbortWrite   = "abort"
	ActionWrite  = "action"
	RenameWrite  = "rename"
	CloseWrite   = "close"
	ReopenWrite  = "reopen"
	StarterWrite = "starter"
)

// Audit events (A3): the value of an audit line's "event" field.
const (
	EventAnswer        = "answer"
	EventSend          = "send"
	EventAbort         = "abort"
	EventAction        = "action"
	EventStarterStart  = "starter.start"
	EventDurableReopen = "durable.reopen"
	EventSpaceRename   = "space.rename"
	EventPaneClose     = "pane.close"
	EventPaneRename    = "pane.rename"
	EventTabRename     = "tab.rename"
)

// Write is one row of the registry.
type Write struct {
	// Name is the write's name (see AnswerWrite).
	Name string
	// Path is the agent's route: POST Path.
	Path string
	// New returns an empty request of the write's type, to decode into.
	New func() WriteRequest
	// Events are the audit events (A3) the write is recorded as: one, or
	// for a rename the one its target names.
	Events []string
	// CallerCheck: with the caller check on, the agent refuses the write
	// from itself and from its descendants, with 403 caller-refused (C2).
	CallerCheck bool
}

// writes is the registry, in the order of C2.
var writes = [...]Write{
	{AnswerWrite, AnswerPath, func() WriteRequest { return new(AnswerRequest) }, []string{EventAnswer}, true},
	{SendWrite, SendPath, func() WriteRequest { return new(SendRequest) }, []string{EventSend}, true},
	{AbortWrite, AbortPath, func() WriteRequest { return new(AbortRequest) }, []string{EventAbort}, true},
	{ActionWrite, ActionPath, func() WriteRequest { return new(ActionRequest) }, []string{EventAction}, true},
	{RenameWrite, RenamePath, func() WriteRequest { return new(RenameRequest) }, []string{EventSpaceRename, EventTabRename, EventPaneRename}, true},
	{CloseWrite, ClosePath, func() WriteRequest { return new(CloseRequest) }, []string{EventPaneClose}, true},
	{ReopenWrite, ReopenPath, func() WriteRequest { return new(ReopenRequest) }, []string{EventDurableReopen}, true},
	{StarterWrite, StarterPath, func() WriteRequest { return new(StarterRequest) }, []string{EventStarterStart}, true},
}

// Writes returns the registry: every write of the protocol, in the order
// of C2. The slice is a copy.
func Writes() []Write {
	out := make([]Write, len(writes))
	for i, w := range writes {
		w.Events = append([]string(nil), w.Events...)
		out[i] = w
	}
	return out
}

// ErrUnknownWrite reports a write name, route or request type that is not
// in the registry. Nothing falls back to another write.
var ErrUnknownWrite = errors.New("not a write of protocol v1")

// WriteNamed returns the write called name.
func WriteNamed(name string) (Write, error) {
	for _, w := range Writes() {
		if w.Name == name {
			return w, nil
		}
	}
	return Write{}, fmt.Errorf("%w: there is no write called %q", ErrUnknownWrite, clip(name))
}

// WriteAt returns the write served at the agent's route path.
func WriteAt(path string) (Write, error) {
	for _, w := range Writes() {
		if w.Path == path {
			return w, nil
		}
	}
	return Write{}, fmt.Errorf("%w: there is no write route %q", ErrUnknownWrite, clip(path))
}

// WriteRequest is the body of one of the registry's writes.
type WriteRequest interface {
	Request
	// Name is the name of the write the request is for.
	Name() string
	// ID is the request id: the agent carries out a request id once
	// (the JSON field requestId; a method cannot share the field's name).
	ID() string
}

// Name implements WriteRequest.
func (*AnswerRequest) Name() string { return AnswerWrite }

// Name implements WriteRequest.
func (*SendRequest) Name() string { return SendWrite }

// Name implements WriteRequest.
func (*AbortRequest) Name() string { return AbortWrite }

// Name implements WriteRequest.
func (*ActionRequest) Name() string { return ActionWrite }

// Name implements WriteRequest.
func (*RenameRequest) Name() string { return RenameWrite }

// Name implements WriteRequest.
func (*CloseRequest) Name() string { return CloseWrite }

// Name implements WriteRequest.
func (*ReopenRequest) Name() string { return ReopenWrite }

// Name implements WriteRequest.
func (*StarterRequest) Name() string { return StarterWrite }

// ID implements WriteRequest.
func (a *AnswerRequest) ID() string { return a.RequestID }

// ID implements WriteRequest.
func (s *SendRequest) ID() string { return s.RequestID }

// ID implements WriteRequest.
func (a *AbortRequest) ID() string { return a.RequestID }

// ID implements WriteRequest.
func (a *ActionRequest) ID() string { return a.RequestID }

// ID implements WriteRequest.
func (r *RenameRequest) ID() string { return r.RequestID }

// ID implements WriteRequest.
func (c *CloseRequest) ID() string { return c.RequestID }

// ID implements WriteRequest.
func (r *ReopenRequest) ID() string { return r.RequestID }

// ID implements WriteRequest.
func (s *StarterRequest) ID() string { return s.RequestID }
