package wire

import (
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Routes for a local program that keeps a conversation of its own (an MCP
// server, one conversation per client session), on the agent's own socket
// beside AskPath. Like asking, none of them is a write in C2's sense and
// none can answer anything: opening adds an empty conversation, a note is
// a message from the agent side, closing ends only a conversation a local
// program opened, and withdrawing ends only the question asked with that
// request id (its asker's own). An agent never serves them on the token
// transport.
const (
	LocalOpenPath  = "/v1/local/open"
	LocalNotePath  = "/v1/local/note"
	LocalClosePath = "/v1/local/close"
	WithdrawPath   = "/v1/ask/withdraw"
)

// LocalOpenRequest opens a new conversation for a local program (POST
// /v1/local/open); the reply names it. Title is 1 to 256 bytes of one line.
type LocalOpenRequest struct {
	Title string `json:"title"`
}

// LocalNoteRequest adds a message from the agent side to an open
// conversation (POST /v1/local/note). Text is 1 to 32768 bytes.
type LocalNoteRequest struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
}

// LocalCloseRequest closes a conversation a local program opened (POST
// /v1/local/close); its open questions are withdrawn.
type LocalCloseRequest struct {
	Conversation string `json:"conversation"`
}

// LocalReply names the conversation a local route opened or touched.
type LocalReply struct {
	Conversation string `json:"conversation"`
}

// WithdrawRequest withdraws the open question asked with RequestID (POST
// /v1/ask/withdraw): its asker gave up waiting. The reply is the question's
// AskReply: withdrawn, or the decision that came first.
type WithdrawRequest struct {
	RequestID string `json:"requestId"`
}

// Validate implements Request.
func (r *LocalOpenRequest) Validate() error {
	return checkLine("title", r.Title, sanitize.TitleBytes)
}

// Validate implements Request.
func (r *LocalNoteRequest) Validate() error {
	if err := checkID("conversation", r.Conversation); err != nil {
		return err
	}
	return checkText("the text", r.Text)
}

// Validate implements Request.
func (r *LocalCloseRequest) Validate() error {
	return checkID("conversation", r.Conversation)
}

// Validate implements Request.
func (r *WithdrawRequest) Validate() error {
	return checkID("requestId", r.RequestID)
}
