package wire

import (
	"encoding/json"
	"fmt"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Error codes an agent returns in an error body.
const (
	CodeProtocol      = "protocol-version" // the request asked for another protocol version
	CodeBadRequest    = "bad-request"
	CodeNotFound      = "not-found"
	CodeCallerRefused = "caller-refused" // C2
	CodeTokenRefused  = "token-refused"  // K6

	// Codes of the write routes (see writes.go and collie-durable(7)).
	CodeBodyTooLarge    = "body-too-large"      // 413: the body is over WriteCap
	CodeUnknownQuestion = "unknown-question"    // 404: no such question in that conversation
	CodeUnknownTarget   = "unknown-target"      // 404: no such conversation, space, tab, button or starter
	CodeStaleRevision   = "stale-revision"      // 409: the question changed since the device showed it
	CodeAlreadyDecided  = "already-decided"     // 409: the question was answered, timed out or withdrawn
	CodeBadAnswer       = "bad-answer"          // 422: the answer does not fit the question
	CodeRequestIDReused = "request-id-reused"   // 409: the request id was used for another request
	CodeBusy            = "busy"                // 409: that command is already running
	CodeNothingRunning  = "nothing-running"     // 409: an abort found nothing to stop
	CodeClosed          = "conversation-closed" // 409: reopen the conversation first
	CodeUnsupported     = "unsupported"         // 501: this agent does not do that write
	CodeAgentError      = "agent-error"         // 500: the agent failed; its log says why
)

// ErrorBody is the JSON body of every error reply.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// ErrorJSON is the JSON body of an error reply with code and message.
func ErrorJSON(code, message string) []byte {
	var e ErrorBody
	e.Error.Code, e.Error.Message = code, message
	b, _ := json.Marshal(e) // a struct of two strings always encodes
	return b
}

// DecodeError reads an agent's error body. Code and message come from the
// agent, so both are cleaned; ok is false when data is not an error body.
func DecodeError(data []byte) (code, message string, ok bool) {
	var e ErrorBody
	if unmarshalClosed(data, &e, jsonstrict.ReplaceInvalidUTF8) != nil || e.Error.Code == "" {
		return "", "", false
	}
	code, _ = sanitize.Line(e.Error.Code, sanitize.LabelBytes)
	message, _ = sanitize.Line(e.Error.Message, sanitize.RationaleBytes)
	return code, message, true
}

// RefusedBytes caps the text of a Refused error.
const RefusedBytes = 1024

// Refused is an agent's refusal of a write, as the bridge passes it on to
// a device: the HTTP status and the code and message of the agent's error
// body. The bridge's client makes it with its fields cleaned (X1): Status
// 400 to 599, Code a lower-case code, Message one line.
type Refused struct {
	Status  int
	Code    string
	Message string
}

func (e *Refused) Error() string {
	s, _ := sanitize.Line(fmt.Sprintf("the agent refused: %s (%s)", e.Message, e.Code), RefusedBytes)
	return s
}
