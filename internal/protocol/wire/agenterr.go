package wire

import (
	"fmt"
	"net/http"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// AgentTextBytes caps the text of a reason or an error that may quote
// what an agent sent.
const AgentTextBytes = 1024

// AgentText cleans text that came from an agent, or that embeds what an
// agent sent, for a reason or an error message: one line, X2, capped at
// AgentTextBytes (X1).
func AgentText(s string) string {
	s, _ = sanitize.Line(s, AgentTextBytes)
	return s
}

// CleanError is an error whose text was cleaned (X1). Its cause stays
// reachable for errors.Is and errors.As, but the cause's own text may hold
// what the agent sent: show only this error's text.
type CleanError struct {
	msg string
	err error
}

// NewCleanError returns an error with msg, cleaned, as its text and cause
// (which may be nil) behind it.
func NewCleanError(msg string, cause error) *CleanError {
	return &CleanError{msg: AgentText(msg), err: cause}
}

func (e *CleanError) Error() string { return e.msg }
func (e *CleanError) Unwrap() error { return e.err }

// CleanErr wraps err with its text cleaned, unless it is clean already.
func CleanErr(err error) error {
	switch e := err.(type) {
	case nil:
		return nil
	case *CleanError:
		return e
	}
	return NewCleanError(err.Error(), err)
}

// StatusText names an HTTP status by its number and the standard text,
// never the agent's own reason phrase (X1).
func StatusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("HTTP status %d", code)
}
