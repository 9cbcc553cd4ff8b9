package wire

import (
	"errors"
	"fmt"
	"io"
)

// The registry: each write of protocol v1 described once, as a name and a
// request type. Everything else about a write follows from its row: its
// agent route (/v1/NAME) and device API route (.../agents/{agent}/NAME),
// its request id (the Header every request embeds first), and the caller
// check of C2, which every write takes. What a write does is kept in a
// table per side, keyed by its name, and each table is tested against
// the registry, so a write added here without its part fails the tests of
// the side that lacks it: the validator (validators, below), the agent's
// handler (durable), the audit event and its schema (audit).

// Names of the writes: the last part of the device API's route
// POST /api/v1/agents/{agent}/NAME and of the agent's route POST /v1/NAME.
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

// Header is what every write's request carries first: the request id. The
// agent carries out a request id once and answers a repeat with the first
// reply (see WriteReply).
type Header struct {
	RequestID string `json:"requestId"`
}

// Head returns the request's header: every write request has one, by
// embedding Header (WriteRequest).
func (h *Header) Head() *Header { return h }

// WriteRequest is the body of one of the registry's writes: a struct that
// embeds Header. Which write it is for is its registry row's (Write.New
// makes it); nothing in the request says so.
type WriteRequest interface {
	Head() *Header
}

// Write is one row of the registry.
type Write struct {
	// Name is the write's name (see AnswerWrite).
	Name string
	// Path is the agent's route: POST Path, which is /v1/Name.
	Path string
	// New returns an empty request of the write's type, to decode into.
	New func() WriteRequest
}

// row is the registry's row of the write called name, whose request is a
// T.
func row[T any, P interface {
	*T
	WriteRequest
}](name string) Write {
	return Write{Name: name, Path: "/v1/" + name, New: func() WriteRequest { return P(new(T)) }}
}

// writes is the registry, in the order of C2.
var writes = [...]Write{
	row[AnswerRequest](AnswerWrite),
	row[SendRequest](SendWrite),
	row[AbortRequest](AbortWrite),
	row[ActionRequest](ActionWrite),
	row[RenameRequest](RenameWrite),
	row[CloseRequest](CloseWrite),
	row[ReopenRequest](ReopenWrite),
	row[StarterRequest](StarterWrite),
}

// Writes returns the registry: every write of the protocol, in the order
// of C2. The slice is a copy.
func Writes() []Write {
	return append([]Write(nil), writes[:]...)
}

// ErrUnknownWrite reports a write name, route or request type that is not
// in the registry. Nothing falls back to another write.
var ErrUnknownWrite = errors.New("not a write of protocol v1")

// WriteNamed returns the write called name.
func WriteNamed(name string) (Write, error) {
	for _, w := range writes {
		if w.Name == name {
			return w, nil
		}
	}
	return Write{}, fmt.Errorf("%w: there is no write called %q", ErrUnknownWrite, clip(name))
}

// WriteAt returns the write served at the agent's route path.
func WriteAt(path string) (Write, error) {
	for _, w := range writes {
		if w.Path == path {
			return w, nil
		}
	}
	return Write{}, fmt.Errorf("%w: there is no write route %q", ErrUnknownWrite, clip(path))
}

// Check says, in a sentence for the user, what is wrong with req, a
// request of the write w, on its own, before the agent looks at its
// state: its request id first, then its write's validator. A request of
// another type than w's is an error (ErrUnknownWrite), never checked as
// another write.
func (w Write) Check(req WriteRequest) error {
	if err := checkID("requestId", req.Head().RequestID); err != nil {
		return err
	}
	v, ok := validators[w.Name]
	if !ok {
		return fmt.Errorf("%w: the write %q has no validator", ErrUnknownWrite, clip(w.Name))
	}
	return v(req)
}

// Decode reads a request body of w of at most WriteCap bytes (length is
// its Content-Length, or -1), decodes req, w.New(), from it with the
// closed schema, and checks it (Check).
func (w Write) Decode(r io.Reader, length int64, req WriteRequest) error {
	if err := ReadRequest(r, length, WriteCap, req); err != nil {
		return err
	}
	return w.Check(req)
}

// validators check each write's own fields, by the write's name; Check
// checks the request id before. A write of the registry without one
// fails TestRegistryTables.
var validators = map[string]func(WriteRequest) error{
	AnswerWrite:  validator(validateAnswer),
	SendWrite:    validator(validateSend),
	AbortWrite:   validator(validateAbort),
	ActionWrite:  validator(validateAction),
	RenameWrite:  validator(validateRename),
	CloseWrite:   validator(validateClose),
	ReopenWrite:  validator(validateReopen),
	StarterWrite: validator(validateStarter),
}

// validator is f as a validator of the table: a request of another type
// than f takes is refused.
func validator[T any, P interface {
	*T
	WriteRequest
}](f func(P) error) func(WriteRequest) error {
	return func(req WriteRequest) error {
		r, ok := req.(P)
		if !ok {
			return fmt.Errorf("%w: a %T is not a %T", ErrUnknownWrite, req, r)
		}
		return f(r)
	}
}
