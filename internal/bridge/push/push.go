// Package push is how a question reaches the human when no page is open
// (D4, D9): a Message, built from cleaned agent text, goes through the
// guard to every configured Provider. A provider only notifies; opening a
// notification opens the web app, and only a tap there answers (D6).
package push

import "context"

// Message is one push. Every string in it is already cleaned and cut
// (X1, X4): a provider sends it as it is.
type Message struct {
	// Agent and Conversation name where the question is (their display
	// names, cleaned); a push always names both (D4).
	Agent        string
	Conversation string
	// Title and Body are what the notification shows. Body holds no
	// question text unless previews are on ([push] preview).
	Title string
	Body  string
	// URL opens the question in the web app (the public_url when set);
	// "" when the bridge has no address a device can open.
	URL string
	// Key is (durable agent, tool call or question id): the guard decides
	// each key once (D9). Empty for a summary or a test push.
	Key string
	// Kind tells a question from the guard's summary and `collie push test`.
	Kind Kind
}

// Kind is what a Message is for.
type Kind int

const (
	KindQuestion Kind = iota // a new question
	KindSummary              // "N more questions are waiting" (D9)
	KindTest                 // collie push test
)

// String is the kind's name in logs, doctor's report of the last push, a
// desktop notification's hints and a web push payload: "question",
// "summary" or "test". An unknown kind is named "question", as a push is
// a question unless it says otherwise.
func (k Kind) String() string {
	switch k {
	case KindSummary:
		return "summary"
	case KindTest:
		return "test"
	}
	return "question"
}

// Provider sends a Message somewhere a human will see it: the ntfy app,
// the desktop, a browser's push service. Send returns when the message
// was handed over, or with an error that says what failed, never holding
// a secret (a token, a subscription's keys). A provider that cannot send
// must not block the others, polling or a card: the caller bounds Send
// with ctx and retries with backoff.
type Provider interface {
	// Name is the provider's name in config.toml, logs and doctor:
	// "ntfy", "desktop", "webpush".
	Name() string
	Send(ctx context.Context, m Message) error
}

// Idler is a Provider that can have nowhere to deliver to: Web Push with
// no device that turned notifications on. While Idle says why (not ""),
// the provider is not in use: nothing is sent through it, and a push it
// would have carried alone reached no one, so it counts for nothing.
type Idler interface {
	Provider
	Idle() string
}

// IdleReason is p's Idle, or "" for a provider that always has somewhere
// to deliver to.
func IdleReason(p Provider) string {
	if i, ok := p.(Idler); ok {
		return i.Idle()
	}
	return ""
}
