// Package wire holds protocol v1 between the bridge and a durable agent: the
// types of the hello and snapshot replies, and decoding that refuses a reply
// over its cap, refuses unknown fields, drops objects whose id breaks X5 and
// cleans every string (X1–X6) before anything else can read it.
//
// The protocol is HTTP/1.1 over a private Unix socket or HTTPS. It is written
// down for agent authors in man/collie-durable.7.
package wire

import "strings"

// Version is the protocol version this package speaks.
const Version = 1

// VersionHeader carries the protocol version on every request and reply.
const VersionHeader = "Collie-Protocol"

// Paths of the read routes.
const (
	HelloPath    = "/v1/hello"
	SnapshotPath = "/v1/snapshot"
)

// Reply caps (X4): a reply over its cap is refused whole.
const (
	HelloCap    = 16 << 10
	SnapshotCap = 4 << 20
)

// Hello is the agent's reply to GET /v1/hello.
type Hello struct {
	Protocol int    `json:"protocol"`
	Agent    string `json:"agent"`              // the agent's display name
	Software string `json:"software,omitempty"` // program and version, for diagnostics
}

// Snapshot is the agent's whole visible state, the reply to GET /v1/snapshot.
type Snapshot struct {
	Spaces   []Space   `json:"spaces"`
	Belt     []Button  `json:"belt,omitempty"` // at most MaxBelt buttons (D2)
	Starters []Starter `json:"starters,omitempty"`
}

// MaxBelt is how many belt buttons an agent may show (D2).
const MaxBelt = 4

// Space is a workspace: the top level of an agent's state.
type Space struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Tabs  []Tab  `json:"tabs"`
}

// Tab groups conversations inside a space.
type Tab struct {
	ID            string         `json:"id"`
	Title         string         `json:"title"`
	Conversations []Conversation `json:"conversations"`
}

// Conversation is one thread of items and the questions open in it.
type Conversation struct {
	ID        string     `json:"id"`
	Title     string     `json:"title"`
	Closed    bool       `json:"closed,omitempty"`
	Items     []Item     `json:"items,omitempty"`
	Questions []Question `json:"questions,omitempty"`
}

// Item kinds (D3). Images and files are not items (X6).
const (
	KindText     = "text"
	KindMarkdown = "markdown"
	KindCode     = "code"
	KindLink     = "link"
	KindToolCall = "tool-call"
)

// Item is one entry of a conversation. Which fields are used depends on Kind.
type Item struct {
	ID       string    `json:"id"`
	Kind     string    `json:"kind"`
	Role     string    `json:"role,omitempty"`     // "agent" or "user" for text
	Text     string    `json:"text,omitempty"`     // text, markdown, code; link caption
	Language string    `json:"language,omitempty"` // code
	URL      string    `json:"url,omitempty"`      // link
	Tool     *ToolCall `json:"tool,omitempty"`     // tool-call
}

// ToolCall is a command the agent ran, with what it printed.
type ToolCall struct {
	Name    string `json:"name"`
	Summary string `json:"summary,omitempty"`
	Output  string `json:"output,omitempty"`
	Status  string `json:"status,omitempty"` // "running", "done" or "failed"
}

// Question kinds (D1).
const (
	AskYesNo  = "yes-no"
	AskChoice = "choice"
	AskLine   = "line"
	AskForm   = "form"
)

// Question is something only a human tap can answer (D6).
type Question struct {
	ID          string   `json:"id"`
	Kind        string   `json:"kind"`
	Title       string   `json:"title"`
	Rationale   string   `json:"rationale,omitempty"`
	Revision    int64    `json:"revision"`
	ToolCall    string   `json:"toolCall,omitempty"`    // key of the tool call it gates (D9)
	AllowAlways bool     `json:"allowAlways,omitempty"` // offers "always allow" (D7)
	AlwaysScope *Scope   `json:"alwaysScope,omitempty"` // what "always allow" would let through
	Options     []Option `json:"options,omitempty"`     // choice
	Fields      []Field  `json:"fields,omitempty"`      // form
	// Push is the agent's own wording for the question's push (D4), sent
	// only to a bridge that announced the extension (ExtPush).
	Push *PushCopy `json:"push,omitempty"`

	// Shortened puts a "Text shortened" mark on the card (X3): the title or
	// rationale was cleaned or cut on its way, by the program that asked
	// (AskRequest.Shortened), by the agent or by the bridge. An agent sets
	// it for what it or the asker changed; the bridge sets it for what its
	// own cleaning changes and never clears it.
	Shortened bool `json:"shortened,omitempty"`
	// Detail is the whole text the question is about (AskRequest.Detail),
	// cleaned as a block and cut to DetailBytes, sent only to a bridge
	// that announced the extension (ExtDetail).
	Detail string `json:"detail,omitempty"`
}

// PushCopy is an agent's wording for a question's push notification (D4).
// Both are single-line fields, cleaned and cut like a title (X2) to
// PushTitleBytes and PushBodyBytes; a copy left blank is dropped. The
// title is shown on lock screens; the body only with [push] preview on.
type PushCopy struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
}

// Limits of a push's wording, in X4's style.
const (
	PushTitleBytes = 64
	PushBodyBytes  = 256
)

// Extensions the bridge may announce on every read, in ExtensionsHeader, a
// comma-separated list. The snapshot's schema is closed, so an agent sends
// an extension's fields only to a bridge that announced it: a bridge from
// before the extension refuses the whole snapshot for an unknown field.
const (
	ExtensionsHeader = "Collie-Extensions"
	// ExtPush: the bridge takes a question's "push" (PushCopy).
	ExtPush = "push"
	// ExtDetail: the bridge takes a question's "detail".
	ExtDetail = "detail"
)

// HasExtension reports whether the value of ExtensionsHeader names ext.
func HasExtension(header, ext string) bool {
	for item := range strings.SplitSeq(header, ",") {
		if strings.TrimSpace(item) == ext {
			return true
		}
	}
	return false
}

// Option is one choice of a choice question.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Field is one input of a form question.
type Field struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Button is a belt button (D2).
type Button struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// Starter begins a new conversation (D2).
type Starter struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}
