package upstream

import (
	"context"
	"errors"
	"net/http"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Everything that leaves this package was cleaned on the way (X1).
//
// An agent chooses more than the JSON it sends: its status line, its
// headers, the names in its TLS certificate, the bytes a JSON or HTTP
// parser quotes back in an error. So no error or reason is passed on as
// built: the methods of [Client] return only errors made by [cleanErr],
// whose text went through [sanitize.Line] with a cap of ReasonBytes, and
// the typed errors ([Unreachable], [Refused]) clean their fields when they
// are made. The agent's own reason phrase of a status line is never shown:
// Collie names the status by its number and the standard text.

// ReasonBytes caps the text of any reason or error that comes out of this
// package.
const ReasonBytes = 1024

// MaxETagBytes caps an agent's ETag; a longer or malformed one is not kept
// (and so never sent back in If-None-Match).
const MaxETagBytes = 256

// agentText cleans text that came from an agent, or that embeds what an
// agent sent, for a reason or an error message: one line, X2, capped.
func agentText(s string) string { return wire.AgentText(s) }

// unreachable builds an Unreachable with a cleaned reason.
func unreachable(reason string, err error) *Unreachable {
	return &Unreachable{Reason: agentText(reason), Err: err}
}

// cleanErr is the one way out of this package for an error: the typed
// errors are rebuilt clean, anything else is wrapped with cleaned text.
func cleanErr(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *wire.CleanError:
		return e
	case *Unreachable:
		return unreachable(e.Reason, e.Err)
	case *Refused:
		return newRefused(e.Status, e.Code, e.Message)
	}
	return wire.CleanErr(err)
}

// newRefused builds a Refused from an agent's error reply. The status is
// passed on to a device only when it is a client or server error (anything
// else becomes 502); the code only when it looks like a code.
func newRefused(status int, code, message string) *Refused {
	if status < 400 || status > 599 {
		status = http.StatusBadGateway
	}
	if !validCode(code) {
		code = "unknown"
	}
	return &Refused{Status: status, Code: code, Message: agentText(message)}
}

// validCode reports whether code looks like an error code of the protocol:
// 1 to 64 bytes of lower-case letters, digits, '-' and '.'.
func validCode(code string) bool {
	if code == "" || len(code) > 64 {
		return false
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validETag reports whether tag is an entity tag (RFC 9110 8.8.3) of at
// most MaxETagBytes: optionally W/, then a quoted string of visible ASCII
// without '"'. Only such a tag is kept and echoed in If-None-Match.
func validETag(tag string) bool {
	if len(tag) > MaxETagBytes {
		return false
	}
	if len(tag) >= 2 && tag[:2] == "W/" {
		tag = tag[2:]
	}
	if len(tag) < 2 || tag[0] != '"' || tag[len(tag)-1] != '"' {
		return false
	}
	for i := 1; i < len(tag)-1; i++ {
		if c := tag[i]; c < 0x21 || c == '"' || c > 0x7E {
			return false
		}
	}
	return true
}

// checkReply refuses a write reply whose ids break X5; ids are never
// cleaned, so a bad one refuses the reply. The message does not echo it.
func checkReply(r *wire.WriteReply) error {
	if r.RequestID != "" && !sanitize.ValidID(r.RequestID) {
		return errors.New("the agent's reply carries an invalid request id")
	}
	if r.Conversation != "" && !sanitize.ValidID(r.Conversation) {
		return errors.New("the agent's reply names a conversation with an invalid id")
	}
	return nil
}

// Hello asks the agent who it is.
func (r *reader) Hello(ctx context.Context) (*wire.Hello, error) {
	h, err := r.hello(ctx)
	return h, cleanErr(err)
}

// Write sends one write to the agent: a POST to path (the route of a write
// of wire.Writes) with req as its JSON body, checked before it leaves
// (X4). It returns the agent's reply, or a *Refused.
func (r *reader) Write(ctx context.Context, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	reply, err := r.write(ctx, path, req)
	if err != nil {
		return nil, cleanErr(err)
	}
	return reply, nil
}
