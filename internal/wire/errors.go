package wire

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/collie-linux/collie/internal/sanitize"
)

// Error codes an agent returns in an error body.
const (
	CodeProtocol      = "protocol-version" // the request asked for another protocol version
	CodeBadRequest    = "bad-request"
	CodeNotFound      = "not-found"
	CodeCallerRefused = "caller-refused" // C2
	CodeTokenRefused  = "token-refused"  // K6
)

// ErrorBody is the JSON body of every error reply.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// WriteError writes an error reply with status, code and a sentence for the user.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	var e ErrorBody
	e.Error.Code, e.Error.Message = code, message
	b, _ := json.Marshal(e) // a struct of two strings always encodes
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// DecodeError reads an agent's error body. Code and message come from the
// agent, so both are cleaned; ok is false when data is not an error body.
func DecodeError(data []byte) (code, message string, ok bool) {
	var e ErrorBody
	if unmarshalClosed(data, &e) != nil || e.Error.Code == "" {
		return "", "", false
	}
	code, _ = sanitize.Line(e.Error.Code, sanitize.LabelBytes)
	message, _ = sanitize.Line(e.Error.Message, sanitize.RationaleBytes)
	return code, message, true
}
