package board

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/grants"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

type question struct {
	q        wire.Question
	conv     string
	req      *wire.AskRequest // nil for a question the agent posed itself
	reply    wire.AskReply
	done     chan struct{}
	timer    *time.Timer
	waiters  int
	lastPoll time.Time
	orphaned bool // withdrawn because nobody waited for it
}

func qkey(cv, id string) string { return cv + "\x00" + id }

// pending returns an open question, or why a write cannot touch it; b.mu
// held.
func (b *Board) pending(cv, id string) (*question, error) {
	q, ok := b.questions[qkey(cv, id)]
	if !ok {
		return nil, durable.Refuse(http.StatusNotFound, wire.CodeUnknownQuestion,
			"there is no question %q in conversation %q; it may be long decided; reload the agent's state", id, cv)
	}
	if q.reply.Status != wire.StatusPending {
		return nil, durable.Refuse(http.StatusConflict, wire.CodeAlreadyDecided, "the question %q was already decided (%s); nothing was changed", id, describe(q))
	}
	return q, nil
}

func describe(q *question) string {
	switch q.reply.Status {
	case wire.StatusAnswered:
		if len(q.reply.OptionIDs) == 1 {
			if q.q.Kind == wire.AskYesNo {
				return "answered " + q.reply.OptionIDs[0]
			}
			return "answered"
		}
		return "answered"
	case wire.StatusTimedOut:
		return "it timed out and was denied"
	case wire.StatusWithdrawn:
		return "withdrawn"
	}
	return q.reply.Status
}

// Answer implements durable.App (D6: only a paired device's tap reaches it).
func (b *Board) Answer(r *wire.AnswerRequest, t durable.Transport) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.conversation(r.Conversation); err != nil {
		return wire.WriteReply{}, err
	}
	q, err := b.pending(r.Conversation, r.Question)
	if err != nil {
		return wire.WriteReply{}, err
	}
	if r.Revision != q.q.Revision {
		return wire.WriteReply{}, durable.Refuse(http.StatusConflict, wire.CodeStaleRevision,
			"the question %q changed since it was shown (revision %d, not %d); reload it and answer again", r.Question, q.q.Revision, r.Revision)
	}
	if err := fits(q, r); err != nil {
		return wire.WriteReply{}, err
	}
	if r.Always {
		switch {
		case t.Remote:
			return wire.WriteReply{}, durable.Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer,
				"\"always allow\" is never taken over the token transport, which has no caller to check; answer yes or no")
		case !q.q.AllowAlways || q.q.AlwaysScope == nil:
			return wire.WriteReply{}, durable.Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer,
				"the question %q does not offer \"always allow\"; answer yes or no", r.Question)
		}
	}
	rep := wire.AskReply{Status: wire.StatusAnswered, OptionIDs: r.OptionIDs, Text: r.Text, Values: r.Values, Reason: r.Reason, Always: r.Always}
	if r.Always {
		g, err := b.grants.Add(*q.q.AlwaysScope, q.q.ID, time.Now())
		if err != nil {
			return wire.WriteReply{}, err
		}
		rep.Grant = g.ID
		b.note(q.conv, "agent", fmt.Sprintf("Always allow granted: %s, until %s. Revoke it with: collie-agent grants --revoke %s", g.Scope.Text, g.Expires, g.ID))
	}
	b.decide(q, rep)
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// fits checks that an answer is one the question can take.
func fits(q *question, r *wire.AnswerRequest) error {
	bad := func(format string, a ...any) error {
		return durable.Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer, format, a...)
	}
	switch q.q.Kind {
	case wire.AskYesNo:
		if len(r.OptionIDs) != 1 || r.OptionIDs[0] != wire.Yes && r.OptionIDs[0] != wire.No {
			return bad("a yes-no question takes optionIds [\"yes\"] or [\"no\"]")
		}
	case wire.AskChoice:
		if len(r.OptionIDs) != 1 || !slices.ContainsFunc(q.q.Options, func(o wire.Option) bool { return o.ID == r.OptionIDs[0] }) {
			return bad("a choice question takes exactly one of its option ids")
		}
	case wire.AskLine:
		if r.Text == "" {
			return bad("a line question takes text")
		}
	case wire.AskForm:
		if len(r.Values) != len(q.q.Fields) {
			return bad("a form question takes a value for each of its %d fields", len(q.q.Fields))
		}
		for _, f := range q.q.Fields {
			if _, ok := r.Values[f.ID]; !ok {
				return bad("the form answer has no value for field %q", f.ID)
			}
		}
	}
	return nil
}

// decide records q's decision, wakes its waiters and takes it off the
// board; b.mu held.
func (b *Board) decide(q *question, rep wire.AskReply) {
	rep.Question, rep.Conversation = q.q.ID, q.conv
	q.reply = rep
	if q.timer != nil {
		q.timer.Stop()
	}
	close(q.done)
	if c, ok := b.byID[q.conv]; ok {
		c.open = slices.DeleteFunc(c.open, func(x *question) bool { return x == q })
		b.note(q.conv, noteRole(rep), decisionNote(q))
	}
	b.decided = append(b.decided, q)
	if len(b.decided) > keepDecided {
		old := b.decided[0]
		b.decided = b.decided[1:]
		b.forget(old)
	}
}

func noteRole(rep wire.AskReply) string {
	if rep.Status == wire.StatusAnswered {
		return "user"
	}
	return "agent"
}

// decisionNote is the line the conversation keeps about a decision. It
// never repeats typed words (a line or form answer may be a secret).
func decisionNote(q *question) string {
	r := q.reply
	switch r.Status {
	case wire.StatusAnswered:
		var what string
		switch q.q.Kind {
		case wire.AskYesNo:
			what = map[string]string{wire.Yes: "Yes", wire.No: "No"}[r.OptionIDs[0]]
			if r.Grant != "" && r.Always {
				what = "Yes, always"
			}
		case wire.AskChoice:
			for _, o := range q.q.Options {
				if o.ID == r.OptionIDs[0] {
					what = o.Label
				}
			}
		default:
			what = "(answered)"
		}
		if r.Grant != "" && !r.Always {
			what = "Yes, by an always-allow grant " + r.Grant
		}
		return fmt.Sprintf("%s — %s", what, q.q.Title)
	case wire.StatusTimedOut:
		return fmt.Sprintf("No answer in time; denied by default — %s", q.q.Title)
	default:
		return fmt.Sprintf("Withdrawn (%s) — %s", r.Reason, q.q.Title)
	}
}

func (b *Board) forget(q *question) {
	delete(b.questions, qkey(q.conv, q.q.ID))
	if q.req != nil {
		if b.byRequest[q.req.RequestID] == q {
			delete(b.byRequest, q.req.RequestID)
		}
		if b.byKey[q.req.ToolCall] == q {
			delete(b.byKey, q.req.ToolCall)
		}
	}
}

// Pose puts a question of the agent's own into conversation cv (no
// program waits for it) and returns its id.
func (b *Board) Pose(cv string, r wire.AskRequest) (string, error) {
	if r.RequestID == "" {
		r.RequestID = "posed"
	}
	if err := r.Validate(); err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.openConversation(cv); err != nil {
		return "", err
	}
	q := b.newQuestion(cv, &r, false)
	b.changed()
	return q.q.ID, nil
}

// newQuestion adds an open question; b.mu held.
func (b *Board) newQuestion(cv string, r *wire.AskRequest, asked bool) *question {
	w := b.cleanWording(r, nil)
	q := &question{
		conv: cv, done: make(chan struct{}), lastPoll: time.Now(),
		q: wire.Question{
			ID: b.nextID("q"), Kind: r.Kind, Title: w.title, Rationale: w.rationale, Revision: 1, Shortened: w.shortened, Detail: w.detail,
			ToolCall: r.ToolCall, Options: slices.Clone(r.Options), Fields: slices.Clone(r.Fields),
		},
		reply: wire.AskReply{Status: wire.StatusPending},
	}
	q.reply.Question, q.reply.Conversation = q.q.ID, cv
	if asked {
		q.req = r
		b.byRequest[r.RequestID] = q
		if r.ToolCall != "" {
			b.byKey[r.ToolCall] = q
		}
	}
	if b.opts.AllowAlways && r.Kind == wire.AskYesNo && r.Tool != nil {
		sc := grants.ScopeFor(*r.Tool, b.opts.AlwaysFor)
		q.q.AllowAlways, q.q.AlwaysScope = true, &sc
	}
	if r.TimeoutSeconds > 0 {
		q.timer = time.AfterFunc(time.Duration(r.TimeoutSeconds)*time.Second, func() { b.timeout(q) })
	}
	b.questions[qkey(cv, q.q.ID)] = q
	c := b.byID[cv]
	c.open = append(c.open, q)
	return q
}

func (b *Board) timeout(q *question) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if q.reply.Status != wire.StatusPending {
		return
	}
	b.decide(q, wire.AskReply{Status: wire.StatusTimedOut, Reason: "no answer in time; denied by default"})
	b.changed()
}

// wording is a question's text as the card shows it.
type wording struct {
	title, rationale, detail string
	shortened                bool
}

// cleanWording cleans a question's title, rationale and detail (X2) and
// reports whether the card must say "Text shortened" (X3): the asker
// cleaned or cut them already, or this cleaning changed them, or the
// detail did not fit the board's budget (what the open questions' details
// may take of the snapshot's cap) and was left out. The flag is what tells
// the reader that part of the text is not shown, so it is never dropped.
// was is the question being worded again, if any; b.mu held.
func (b *Board) cleanWording(r *wire.AskRequest, was *question) wording {
	var w wording
	var t, ra, d bool
	w.title, t = sanitize.Line(r.Title, sanitize.TitleBytes)
	w.rationale, ra = sanitize.Block(r.Rationale, sanitize.RationaleBytes)
	w.detail, d = sanitize.Block(r.Detail, wire.DetailBytes)
	if w.detail != "" && b.detailBytes(was)+len(w.detail) > detailBudget {
		w.detail, d = "", true
	}
	w.shortened = r.Shortened || t || ra || d
	return w
}

// detailBytes is what the open questions' details take, but skip's; b.mu
// held.
func (b *Board) detailBytes(skip *question) int {
	n := 0
	for _, q := range b.questions {
		if q != skip && q.reply.Status == wire.StatusPending {
			n += len(q.q.Detail)
		}
	}
	return n
}
