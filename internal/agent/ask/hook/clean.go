package hook

import (
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// What the agent sends is cleaned before this package reads it (X1), as
// the bridge does: every error out of client.call is made by cleanErr, and
// every AskReply out of client.wait by cleanReply. What is printed is
// cleaned again for the terminal (see report).

// cleanErr cleans the text of an error that may quote what the agent sent
// (a status line, a header, a JSON key): one line, X2, capped.
func cleanErr(err error) error {
	if e, ok := err.(*AgentError); ok {
		return e // its code and message were cleaned by wire.DecodeError
	}
	return wire.CleanErr(err)
}

// cleanReply cleans every string of an agent's AskReply (X2): the typed
// answer and the values keep their lines, the rest is one line. Ids stay
// as they are (X5); one that is not valid is dropped.
func cleanReply(r wire.AskReply) wire.AskReply {
	line := func(s string, limit int) string {
		s, _ = sanitize.Line(s, limit)
		return s
	}
	block := func(s string) string {
		s, _ = sanitize.Block(s, sanitize.SendMaxBytes)
		return s
	}
	id := func(s string) string {
		if s == "" || sanitize.ValidID(s) {
			return s
		}
		return ""
	}
	r.Question, r.Conversation, r.Grant = id(r.Question), id(r.Conversation), id(r.Grant)
	r.Status = line(r.Status, 32)
	r.Text = block(r.Text)
	r.Reason = line(r.Reason, wire.ReasonBytes)
	var ids []string
	for _, o := range r.OptionIDs {
		if sanitize.ValidID(o) {
			ids = append(ids, o)
		}
	}
	r.OptionIDs = ids
	if r.Values != nil {
		vals := make(map[string]string, len(r.Values))
		for k, v := range r.Values {
			if sanitize.ValidID(k) {
				vals[k] = block(v)
			}
		}
		r.Values = vals
	}
	return r
}
