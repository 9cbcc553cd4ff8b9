package dispatch

import (
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// NameBytes caps the agent's and the conversation's names in a push: a
// notification's title is short, and both must fit (D4).
const NameBytes = 64

// Question is a new open question, as the bridge saw it in a snapshot.
// Every string is already cleaned (X1); the names are cut again here.
type Question struct {
	// Agent is the durable agent's name in sources.json: the guard's key
	// and the name shown when the agent gave none.
	Agent string
	// AgentTitle is the name the agent gave in its hello ("" for none).
	AgentTitle string
	// Conversation and ConversationTitle are the conversation's id and
	// title.
	Conversation, ConversationTitle string
	// ID, ToolCall and Title are the question's.
	ID, ToolCall, Title string
	// Push is the agent's own wording (D4); nil for none.
	Push *wire.PushCopy
}

// Key is the guard's key of q: (durable agent, tool call), or (durable
// agent, conversation, question id) for a question without a tool call
// (D9). NUL never occurs in an agent's name or an id (X5).
func (q Question) Key() string {
	if q.ToolCall != "" {
		return q.Agent + "\x00call\x00" + q.ToolCall
	}
	return q.Agent + "\x00question\x00" + q.Conversation + "\x00" + q.ID
}

// ConversationKey names q's conversation for the per-conversation limit.
func (q Question) ConversationKey() string { return q.Agent + "\x00" + q.Conversation }

// Compose writes q's push (D4). The title names the agent, with the
// agent's push title or "a question is waiting"; the body names the
// conversation. Without preview the body holds no text of the question
// (a lock screen is public): "In CONVERSATION. Open Collie to answer."
// With preview it adds the agent's push body, or else the question's
// title.
func Compose(q Question, preview bool, url string) push.Message {
	agent := q.AgentTitle
	if agent == "" {
		agent = q.Agent
	}
	agent = name(agent)
	conv := name(q.ConversationTitle)
	if conv == "" {
		conv = name(q.Conversation)
	}
	title := agent + ": a question is waiting"
	if q.Push != nil && q.Push.Title != "" {
		title = agent + ": " + q.Push.Title
	}
	body := "In " + conv + ". Open Collie to answer."
	if preview {
		text := q.Title
		if q.Push != nil && q.Push.Body != "" {
			text = q.Push.Body
		}
		body = "In " + conv + ": " + text
	}
	return push.Message{Agent: agent, Conversation: conv, Title: title, Body: body, URL: url, Key: q.Key(), Kind: push.KindQuestion}
}

// name cleans and cuts an agent's or a conversation's name for a push.
func name(s string) string {
	s, _ = sanitize.Line(s, NameBytes)
	return s
}

// summary writes the summary push: n questions held back, and no push
// until the silent hour ends (D9). The time is the bridge's local time.
func summary(n int, until time.Time, url string) push.Message {
	noun := "questions are"
	if n == 1 {
		noun = "question is"
	}
	return push.Message{
		Title: fmt.Sprintf("Collie: %d more %s waiting", n, noun),
		Body:  fmt.Sprintf("No more pushes until %s. Open Collie to see them.", until.Local().Format("15:04")),
		URL:   url, Kind: push.KindSummary,
	}
}

// testMessage is collie push test's push.
func testMessage(url string) push.Message {
	return push.Message{Title: "Collie: test push", Body: "Pushes from Collie reach you here. Sent by collie push test.", URL: url, Kind: push.KindTest}
}
