package wire

import (
	"fmt"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Report lists what cleaning dropped from a snapshot.
type Report struct {
	Dropped []Drop
}

// Drop is one object left out of a snapshot, and why.
type Drop struct {
	Conversation string // id of the conversation it was in, if any
	What         string // e.g. `item "i3"`
	Reason       string
	// ID is the dropped object's id when the id was valid (its content
	// was not), and Repeated says the id was given before in its list: a
	// delta (delta.go) needs both to apply as a whole read would.
	ID       string
	Repeated bool
}

func (r *Report) drop(conv, what, reason string) {
	r.Dropped = append(r.Dropped, Drop{Conversation: conv, What: what, Reason: reason})
}

// dropID records an object of a kind ("item", "question") with a valid id
// dropped for its content.
func (r *Report) dropID(conv, kind, id, reason string) {
	r.Dropped = append(r.Dropped, Drop{Conversation: conv, What: fmt.Sprintf("%s %q", kind, id), Reason: reason, ID: id})
}

// Clean makes a decoded snapshot safe to store and draw (X1–X6): objects
// with a bad or repeated id are dropped with everything under them (X5),
// every string is cleaned and cut to its limit (X2, X4), an option or button
// left blank is dropped and an empty field is named by its id (X3), and a
// link item with an unsafe address is dropped (X6). Ids are never changed.
func Clean(s *Snapshot, rep *Report) {
	s.Spaces = keep(s.Spaces, rep, "", "space", func(sp *Space) string { return sp.ID }, func(sp *Space) bool {
		sp.Title = titleOr(sp.Title, sp.ID)
		sp.Tabs = keep(sp.Tabs, rep, "", "tab", func(t *Tab) string { return t.ID }, func(t *Tab) bool {
			t.Title = titleOr(t.Title, t.ID)
			t.Conversations = keep(t.Conversations, rep, "", "conversation", func(c *Conversation) string { return c.ID }, func(c *Conversation) bool {
				cleanConversation(c, rep)
				return true
			})
			return true
		})
		return true
	})
	s.Belt = cleanBelt(s.Belt, rep)
	s.Starters = cleanStarters(s.Starters, rep)
}

// cleanBelt cleans a belt as Clean does: the first MaxBelt buttons, each
// with a valid, unrepeated id and a label that is not blank.
func cleanBelt(belt []Button, rep *Report) []Button {
	if len(belt) > MaxBelt {
		rep.drop("", "belt", fmt.Sprintf("%d buttons; only the first %d are kept", len(belt), MaxBelt))
		belt = belt[:MaxBelt]
	}
	return keep(belt, rep, "", "belt button", func(b *Button) string { return b.ID }, func(b *Button) bool {
		b.Label, _ = sanitize.Label(b.Label, sanitize.BeltChars)
		if blank(b.Label) {
			rep.drop("", fmt.Sprintf("belt button %q", b.ID), "its label is blank after cleaning")
			return false
		}
		return true
	})
}

// cleanStarters cleans starters as Clean does.
func cleanStarters(starters []Starter, rep *Report) []Starter {
	return keep(starters, rep, "", "starter", func(st *Starter) string { return st.ID }, func(st *Starter) bool {
		st.Label, _ = sanitize.Line(st.Label, sanitize.LabelBytes)
		return !blank(st.Label)
	})
}

func cleanConversation(c *Conversation, rep *Report) {
	c.Title = titleOr(c.Title, c.ID)
	c.Items = keep(c.Items, rep, c.ID, "item", func(it *Item) string { return it.ID }, func(it *Item) bool {
		if reason := cleanItem(it); reason != "" {
			rep.dropID(c.ID, "item", it.ID, reason)
			return false
		}
		return true
	})
	c.Questions = keep(c.Questions, rep, c.ID, "question", func(q *Question) string { return q.ID }, func(q *Question) bool {
		if reason := cleanQuestion(q); reason != "" {
			rep.dropID(c.ID, "question", q.ID, reason)
			return false
		}
		return true
	})
}

// cleanItem cleans it in place and returns why it must be dropped, if so.
func cleanItem(it *Item) string {
	it.Role, _ = sanitize.Line(it.Role, sanitize.LabelBytes)
	switch it.Kind {
	case KindText:
		it.Text, _ = sanitize.Block(it.Text, sanitize.MessageBytes)
	case KindMarkdown, KindCode:
		it.Text, _ = sanitize.Block(it.Text, sanitize.CodeBytes)
		it.Language, _ = sanitize.Line(it.Language, sanitize.LabelBytes)
	case KindLink:
		if err := sanitize.CheckLink(it.URL); err != nil {
			return err.Error()
		}
		it.Text, _ = sanitize.Line(it.Text, sanitize.TitleBytes)
	case KindToolCall:
		if it.Tool == nil {
			return "a tool-call item without a tool"
		}
		t := it.Tool
		t.Name, _ = sanitize.Line(t.Name, sanitize.TitleBytes)
		t.Summary, _ = sanitize.Block(t.Summary, sanitize.SummaryBytes)
		t.Output, _ = sanitize.Block(t.Output, sanitize.OutputBytes)
		t.Status, _ = sanitize.Line(t.Status, sanitize.LabelBytes)
	default:
		return fmt.Sprintf("unknown kind %q", clip(it.Kind))
	}
	if it.Kind != KindToolCall {
		it.Tool = nil
	}
	if it.Kind != KindLink {
		it.URL = ""
	}
	return ""
}

// cleanQuestion cleans q in place and returns why it must be dropped, if so.
func cleanQuestion(q *Question) string {
	var t, r bool
	q.Title, t = sanitize.Line(q.Title, sanitize.TitleBytes)
	q.Rationale, r = sanitize.Block(q.Rationale, sanitize.RationaleBytes)
	var d bool
	q.Detail, d = sanitize.Block(q.Detail, DetailBytes)
	q.Shortened = q.Shortened || t || r || d
	if blank(q.Title) {
		q.Title = q.ID
	}
	if pc := q.Push; pc != nil {
		pc.Title, _ = sanitize.Line(pc.Title, PushTitleBytes)
		pc.Body, _ = sanitize.Line(pc.Body, PushBodyBytes)
		if blank(pc.Title) && blank(pc.Body) {
			q.Push = nil
		}
	}
	if q.ToolCall != "" && !sanitize.ValidID(q.ToolCall) {
		return "its tool-call key breaks the id rule"
	}
	if sc := q.AlwaysScope; sc != nil {
		sc.Tool, _ = sanitize.Line(sc.Tool, sanitize.LabelBytes)
		sc.CommandPrefix, _ = sanitize.Line(sc.CommandPrefix, sanitize.TitleBytes)
		sc.Text, _ = sanitize.Line(sc.Text, sanitize.TitleBytes)
		sc.DurationSeconds = max(sc.DurationSeconds, 0)
	}
	switch q.Kind {
	case AskYesNo, AskLine:
		q.Options, q.Fields = nil, nil
	case AskChoice:
		q.Fields = nil
		q.Options = keep(q.Options, nil, "", "option", func(o *Option) string { return o.ID }, func(o *Option) bool {
			var changed bool
			o.Label, changed = sanitize.Line(o.Label, sanitize.LabelBytes)
			q.Shortened = q.Shortened || changed // an answer's words are part of the card (X3)
			return !blank(o.Label)
		})
		if len(q.Options) == 0 {
			return "a choice question with no usable option"
		}
	case AskForm:
		q.Options = nil
		q.Fields = keep(q.Fields, nil, "", "field", func(f *Field) string { return f.ID }, func(f *Field) bool {
			label, changed := sanitize.Line(f.Label, sanitize.LabelBytes)
			q.Shortened = q.Shortened || changed
			f.Label = labelOr(label, f.ID)
			return true
		})
		if len(q.Fields) == 0 {
			return "a form question with no usable field"
		}
	default:
		return fmt.Sprintf("unknown kind %q", clip(q.Kind))
	}
	return ""
}

// keep filters list in place: an element stays when its id is valid and not
// seen before in this list, and ok (which may clean it) says so.
func keep[T any](list []T, rep *Report, conv, what string, id func(*T) string, ok func(*T) bool) []T {
	out := list[:0]
	seen := make(map[string]struct{}, len(list))
	for i := range list {
		e := &list[i]
		k := id(e)
		switch _, dup := seen[k]; {
		case !sanitize.ValidID(k):
			if rep != nil {
				rep.drop(conv, what, fmt.Sprintf("bad id %q", clip(k)))
			}
		case dup:
			if rep != nil {
				rep.Dropped = append(rep.Dropped, Drop{Conversation: conv, What: fmt.Sprintf("%s %q", what, k), Reason: "repeated id", ID: k, Repeated: true})
			}
		case ok(e):
			seen[k] = struct{}{}
			out = append(out, *e)
		}
	}
	clear(list[len(out):])
	return out
}

// blank reports whether a cleaned label shows nothing: a button is never
// blank (X3), and spaces alone are blank too.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

func titleOr(s, id string) string {
	s, _ = sanitize.Line(s, sanitize.TitleBytes)
	if blank(s) {
		return id
	}
	return s
}

func labelOr(s, id string) string {
	s, _ = sanitize.Line(s, sanitize.LabelBytes)
	if blank(s) {
		return id
	}
	return s
}

// clip makes an untrusted value safe to put in a log line.
func clip(s string) string {
	s, _ = sanitize.Line(s, 40)
	return s
}

func cleanHello(h *Hello) {
	h.Agent, _ = sanitize.Line(h.Agent, sanitize.TitleBytes)
	h.Software, _ = sanitize.Line(h.Software, sanitize.TitleBytes)
}
