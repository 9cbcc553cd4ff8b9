package audit

import (
	"fmt"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Who names the durable agent and the paired device of a line (A2). A
// refused request from a device Collie does not know (a forged or revoked
// credential) still gets a line: give the device id the request claimed,
// or "" when it named none.
type Who struct {
	Session string // the durable agent's name
	Device  string // the paired device's id
}

// Event names (A3): the value of a line's "event" field. Each is a row of
// schemas, which says what its line keeps.
const (
	EventAnswer        = "answer"
	EventSend          = "send"
	EventAbort         = "abort"
	EventAction        = "action"
	EventStarterStart  = "starter.start"
	EventDurableReopen = "durable.reopen"
	EventSpaceRename   = "space.rename"
	EventPaneClose     = "pane.close"
	EventPaneRename    = "pane.rename"
	EventTabRename     = "tab.rename"
)

// Event is one write from a device (A3). The set is closed: the only
// events are the types of this package, Answer to PushUnsubscribe, each
// of which writes exactly the fields its row of schemas lists, in its
// order: the one table the writer and the reader (CheckFields) share.
type Event interface {
	// Name is the event's name, as in the line's "event" field.
	Name() string
	// values appends to dst the values of the event's fields, one for
	// each field of its schema, in order, of the field's kind; none for
	// the alternative not taken (turn or question; optionIds or answer).
	values(dst []value) []value
	// result is the outcome to record.
	result() Result
}

// Result is how a write ended: OK, Refused or Failed. The zero Result is
// not a result: Record refuses it for the events whose line A3 gives a
// result (answer, send, abort, action, starter.start).
type Result struct {
	status string
	reason string
}

// Result statuses, as in a line's "result" field.
const (
	StatusOK      = "ok"
	StatusRefused = "refused"
	StatusFailed  = "failed"
)

// OK is a write that the durable agent carried out.
var OK = Result{status: StatusOK}

// Refused is a write that Collie or the durable agent turned down: a bad
// or revoked credential, another Origin, a stale revision, a question
// decided already, text of 0 or over 32768 bytes (X4), the caller check
// (C2). reason is short and says why, for example "stale-revision"; it is
// recorded in the line's "reason" field (masked with content=none).
func Refused(reason string) Result { return Result{status: StatusRefused, reason: reason} }

// Failed is a write that could not reach the durable agent, or that the
// agent failed to carry out: reason says what went wrong.
func Failed(reason string) Result { return Result{status: StatusFailed, reason: reason} }

// Status is "ok", "refused", "failed", or "" for the zero Result.
func (r Result) Status() string { return r.status }

// Reason is why a write was refused or failed; "" when it was ok.
func (r Result) Reason() string { return r.reason }

func (r Result) String() string {
	if r.reason == "" {
		return r.status
	}
	return r.status + ": " + r.reason
}

// Target is what a send or an abort was aimed at: a turn or a question (A3).
type Target struct {
	key string // "turn" or "question"
	id  string
}

// Turn targets the turn running in a conversation. Protocol v1 names a
// turn by its conversation's id, so id is the conversation's id.
func Turn(id string) Target { return Target{key: "turn", id: id} }

// Question targets a question, by its id.
func Question(id string) Target { return Target{key: "question", id: id} }

// values are the target's turn and question, one of them none.
func (t Target) values() (turn, question value) {
	if t.key == "question" {
		return value{}, str(t.id)
	}
	return str(t.id), value{}
}

// Answered is what kind of answer a question got, built by OptionIDs,
// TextAnswer or ValuesAnswer. It holds option ids or the kind of answer,
// never the words a human typed (A3): there is no way to put them in.
type Answered struct {
	kind      string   // "optionIds", "text" or "values"
	optionIDs []string // for "optionIds"
}

// OptionIDs is an answer by option ids: ["yes"] or ["no"] for a yes-no
// question, the chosen option for a choice question.
func OptionIDs(ids ...string) Answered {
	return Answered{kind: "optionIds", optionIDs: append([]string(nil), ids...)}
}

// Answer kinds for typed answers: the line records only the kind.
var (
	TextAnswer   = Answered{kind: "text"}   // a line of text
	ValuesAnswer = Answered{kind: "values"} // the fields of a form
)

// AnsweredOf is the kind of answer in req: its option ids, or "text" or
// "values". It never reads what the text or the values say.
func AnsweredOf(req wire.AnswerRequest) Answered {
	switch {
	case len(req.OptionIDs) > 0:
		return OptionIDs(req.OptionIDs...)
	case req.Values != nil:
		return ValuesAnswer
	case req.Text != "":
		return TextAnswer
	}
	return OptionIDs()
}

// values are the answer's optionIds and answer (its kind), one of them
// none.
func (a Answered) values() (optionIDs, answer value) {
	switch a.kind {
	case "text", "values":
		return value{}, str(a.kind)
	}
	return strs(a.optionIDs), value{}
}

// Answer: a tap answered a question. The line keeps requestId, question,
// revision, optionIds or answer ("text" or "values"), result (A3).
type Answer struct {
	RequestID string
	Question  string
	Revision  int64
	Answered  Answered
	Result    Result
}

// AnswerOf is the Answer event of a forwarded answer request; it keeps no
// typed words, since Answered holds only the kind of answer.
func AnswerOf(req wire.AnswerRequest, r Result) Answer {
	return Answer{RequestID: req.RequestID, Question: req.Question, Revision: req.Revision, Answered: AnsweredOf(req), Result: r}
}

func (Answer) Name() string { return EventAnswer }
func (a Answer) values(dst []value) []value {
	ids, kind := a.Answered.values()
	return append(dst, str(a.RequestID), str(a.Question), num(a.Revision), ids, kind)
}
func (a Answer) result() Result { return a.Result }

// Send: the user sent or steered text. The line keeps requestId, turn or
// question, steer, result, and preview: the first PreviewChars characters
// of Text (A3). Text is cut here, so pass the whole text.
type Send struct {
	RequestID string
	On        Target
	Steer     bool
	Text      string
	Result    Result
}

// SendOf is the Send event of a forwarded send request.
func SendOf(req wire.SendRequest, r Result) Send {
	return Send{RequestID: req.RequestID, On: Turn(req.Conversation), Steer: req.Steer, Text: req.Text, Result: r}
}

func (Send) Name() string { return EventSend }
func (s Send) values(dst []value) []value {
	turn, q := s.On.values()
	return append(dst, str(s.RequestID), turn, q, truth(s.Steer), str(preview(s.Text)))
}
func (s Send) result() Result { return s.Result }

// Abort: the user stopped a turn or withdrew a question. The line keeps
// requestId, turn or question, result (A3).
type Abort struct {
	RequestID string
	On        Target
	Result    Result
}

// AbortOf is the Abort event of a forwarded abort request: its question
// when it names one, else the turn of its conversation.
func AbortOf(req wire.AbortRequest, r Result) Abort {
	on := Turn(req.Conversation)
	if req.Question != "" {
		on = Question(req.Question)
	}
	return Abort{RequestID: req.RequestID, On: on, Result: r}
}

func (Abort) Name() string { return EventAbort }
func (a Abort) values(dst []value) []value {
	turn, q := a.On.values()
	return append(dst, str(a.RequestID), turn, q)
}
func (a Abort) result() Result { return a.Result }

// Action: the user tapped a belt button. The line keeps requestId,
// actionId, turn (the conversation the tap came from, "" when none) and
// result (A3).
type Action struct {
	RequestID string
	ActionID  string
	Turn      string
	Result    Result
}

// ActionOf is the Action event of a forwarded belt-button tap.
func ActionOf(req wire.ActionRequest, r Result) Action {
	return Action{RequestID: req.RequestID, ActionID: req.Action, Turn: req.Conversation, Result: r}
}

func (Action) Name() string { return EventAction }
func (a Action) values(dst []value) []value {
	return append(dst, str(a.RequestID), str(a.ActionID), str(a.Turn))
}
func (a Action) result() Result { return a.Result }

// StarterStart: the user tapped a starter. The line keeps starterId,
// requestId, result (A3).
type StarterStart struct {
	StarterID string
	RequestID string
	Result    Result
}

// StarterOf is the StarterStart event of a forwarded starter tap.
func StarterOf(req wire.StarterRequest, r Result) StarterStart {
	return StarterStart{StarterID: req.Starter, RequestID: req.RequestID, Result: r}
}

func (StarterStart) Name() string { return EventStarterStart }
func (s StarterStart) values(dst []value) []value {
	return append(dst, str(s.StarterID), str(s.RequestID))
}
func (s StarterStart) result() Result { return s.Result }

// DurableReopen: the user reopened a closed conversation. The line keeps
// conversation (A3); a result and reason only when it was not OK. The
// zero Result counts as OK.
type DurableReopen struct {
	Conversation string
	Result       Result
}

// ReopenOf is the DurableReopen event of a forwarded reopen request.
func ReopenOf(req wire.ReopenRequest, r Result) DurableReopen {
	return DurableReopen{Conversation: req.Conversation, Result: r}
}

func (DurableReopen) Name() string                 { return EventDurableReopen }
func (d DurableReopen) values(dst []value) []value { return append(dst, str(d.Conversation)) }
func (d DurableReopen) result() Result             { return d.Result }

// SpaceRename: the user renamed a workspace. The line keeps space and
// name, the new name (A3); a result and reason only when it was not OK.
type SpaceRename struct {
	Space   string
	NewName string
	Result  Result
}

func (SpaceRename) Name() string                 { return EventSpaceRename }
func (s SpaceRename) values(dst []value) []value { return append(dst, str(s.Space), str(s.NewName)) }
func (s SpaceRename) result() Result             { return s.Result }

// PaneRename: the user renamed a conversation. The line keeps
// conversation and name, the new name (A3); a result and reason only when
// it was not OK.
type PaneRename struct {
	Conversation string
	NewName      string
	Result       Result
}

func (PaneRename) Name() string { return EventPaneRename }
func (p PaneRename) values(dst []value) []value {
	return append(dst, str(p.Conversation), str(p.NewName))
}
func (p PaneRename) result() Result { return p.Result }

// TabRename: the user renamed a tab. The line keeps tab and name, the new
// name (A3); a result and reason only when it was not OK.
type TabRename struct {
	Tab     string
	NewName string
	Result  Result
}

func (TabRename) Name() string                 { return EventTabRename }
func (t TabRename) values(dst []value) []value { return append(dst, str(t.Tab), str(t.NewName)) }
func (t TabRename) result() Result             { return t.Result }

// RenameOf is the event of a forwarded rename request: SpaceRename,
// TabRename or PaneRename, after the one of Space, Tab and Conversation
// it names (checked in that order).
func RenameOf(req wire.RenameRequest, r Result) Event {
	switch {
	case req.Space != "":
		return SpaceRename{Space: req.Space, NewName: req.Title, Result: r}
	case req.Tab != "":
		return TabRename{Tab: req.Tab, NewName: req.Title, Result: r}
	}
	return PaneRename{Conversation: req.Conversation, NewName: req.Title, Result: r}
}

// PaneClose: the user closed a conversation. The line keeps conversation
// (A3); a result and reason only when it was not OK.
type PaneClose struct {
	Conversation string
	Result       Result
}

// CloseOf is the PaneClose event of a forwarded close request.
func CloseOf(req wire.CloseRequest, r Result) PaneClose {
	return PaneClose{Conversation: req.Conversation, Result: r}
}

func (PaneClose) Name() string                 { return EventPaneClose }
func (p PaneClose) values(dst []value) []value { return append(dst, str(p.Conversation)) }
func (p PaneClose) result() Result             { return p.Result }

// writeEvents make the event of each write of the protocol's registry
// (wire.Writes), by the write's name, from its request. A write of the
// registry without one fails TestWriteEventsAreTheRegistry.
var writeEvents = map[string]func(wire.WriteRequest, Result) (Event, error){
	wire.AnswerWrite:  eventOf(func(q *wire.AnswerRequest, r Result) Event { return AnswerOf(*q, r) }),
	wire.SendWrite:    eventOf(func(q *wire.SendRequest, r Result) Event { return SendOf(*q, r) }),
	wire.AbortWrite:   eventOf(func(q *wire.AbortRequest, r Result) Event { return AbortOf(*q, r) }),
	wire.ActionWrite:  eventOf(func(q *wire.ActionRequest, r Result) Event { return ActionOf(*q, r) }),
	wire.RenameWrite:  eventOf(func(q *wire.RenameRequest, r Result) Event { return RenameOf(*q, r) }),
	wire.CloseWrite:   eventOf(func(q *wire.CloseRequest, r Result) Event { return CloseOf(*q, r) }),
	wire.ReopenWrite:  eventOf(func(q *wire.ReopenRequest, r Result) Event { return ReopenOf(*q, r) }),
	wire.StarterWrite: eventOf(func(q *wire.StarterRequest, r Result) Event { return StarterOf(*q, r) }),
}

// eventOf is f as a maker of the table: a nil request is an empty one (the
// write was refused before its body was read), and a request of another
// type than f takes is an error (wire.ErrUnknownWrite).
func eventOf[T any, P interface {
	*T
	wire.WriteRequest
}](f func(P, Result) Event) func(wire.WriteRequest, Result) (Event, error) {
	return func(req wire.WriteRequest, r Result) (Event, error) {
		if req == nil {
			return f(P(new(T)), r), nil
		}
		q, ok := req.(P)
		if !ok {
			return nil, fmt.Errorf("%w: a %T is not a %T", wire.ErrUnknownWrite, req, q)
		}
		return f(q, r), nil
	}
}

// EventOf is the event of the write called name (a name of the registry,
// wire.Writes) with request req, which is nil when the write was refused
// before its body could be read: the event then records what is known,
// which write it was. A write of a device's own settings (push.subscribe,
// push.unsubscribe) has no request: req is nil, and the event keeps what
// a refusal knows. A name that is not in the registry, or a request
// that is not of its write's type, is an error: nothing is recorded as
// another write.
func EventOf(name string, req wire.WriteRequest, r Result) (Event, error) {
	if mk, ok := deviceEvents[name]; ok && req == nil {
		return mk(r), nil
	}
	mk, ok := writeEvents[name]
	if !ok {
		if _, err := wire.WriteNamed(name); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: the audit log has no event for the write %q", wire.ErrUnknownWrite, name)
	}
	return mk(req, r)
}
