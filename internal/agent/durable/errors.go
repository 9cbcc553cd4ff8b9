package durable

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Error is a refusal with its HTTP status and protocol error code. An App
// returns one to refuse a write; any other error is a 500.
type Error struct {
	Status  int
	Code    string
	Message string // a sentence for the user that says what to do
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Refuse returns an *Error with a formatted message.
func Refuse(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}

// statusOf maps err to the error reply it gets.
func statusOf(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: wire.CodeAgentError,
		Message: "the agent failed to carry out the request: " + err.Error() + "; see the agent's log"}
}
