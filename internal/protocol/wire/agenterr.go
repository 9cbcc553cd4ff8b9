package wire

import (
	"fmt"

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
// never the agent's own reason phrase (X1). The texts are net/http's (a
// test holds them to it), for the statuses an agent or the bridge may
// answer: wire links no net/http, so that collie's hook program, which
// starts once per tool call, does not either.
func StatusText(code int) string {
	if t := statusTexts[code]; t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprintf("HTTP status %d", code)
}

var statusTexts = map[int]string{
	200: "OK", 201: "Created", 202: "Accepted", 204: "No Content",
	301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect",
	400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
	406: "Not Acceptable", 408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
	412: "Precondition Failed", 413: "Request Entity Too Large", 414: "Request URI Too Long", 415: "Unsupported Media Type",
	421: "Misdirected Request", 422: "Unprocessable Entity", 426: "Upgrade Required", 428: "Precondition Required", 429: "Too Many Requests",
	431: "Request Header Fields Too Large",
	500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
	505: "HTTP Version Not Supported",
}
