package wire

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Paths of the write routes. Each is a POST with a JSON body of at most
// WriteCap bytes that names a request id; the agent carries out a request
// id once and answers a repeat with the first reply (see WriteReply).
// The registry (Writes) describes each write once: these routes are its
// rows' (TestRegistry holds them to it).
const (
	AnswerPath  = "/v1/answer"
	SendPath    = "/v1/send"
	AbortPath   = "/v1/abort"
	ActionPath  = "/v1/action"
	RenamePath  = "/v1/rename"
	ClosePath   = "/v1/close"
	ReopenPath  = "/v1/reopen"
	StarterPath = "/v1/starter"
)

// Routes for local programs on the agent's own socket. They are not writes
// in C2's sense: asking a question (open to every local caller, descendants
// included, since a question only waits for a human) and reading or revoking
// "always allow" grants (revoking only takes permission away). An agent
// never serves them on the token transport.
const (
	AskPath    = "/v1/ask"
	GrantsPath = "/v1/grants"
	RevokePath = "/v1/grants/revoke"
)

// Caps on request and reply bodies.
const (
	// WriteCap is the largest request body an agent reads; a larger one is
	// refused with 413 before it is decoded.
	WriteCap = 64 << 10
	// ReplyCap is the largest reply to a write, an ask or a grants read.
	ReplyCap = 256 << 10
	// ReasonBytes is the longest note a human may give with an answer.
	ReasonBytes = 2048
	// DetailBytes limits the whole text a question is about (AskRequest and
	// Question detail): a tool's command or a file's content, shown whole
	// on the card when asked for. A longer one is sent as its head and
	// tail (see hook.Excerpt).
	DetailBytes = 256 << 10
	// AskCap is the largest ask request body an agent reads: WriteCap, and
	// room for a detail of DetailBytes with every byte escaped in JSON.
	AskCap = WriteCap + 6*DetailBytes
	// MaxAskWait is the longest an ask request waits for a decision before
	// the agent replies "pending" and the asker asks again.
	MaxAskWait = 50
)

// Answers of a yes-no question: the option ids of an answer.
const (
	Yes = "yes"
	No  = "no"
)

// AnswerRequest answers a question (POST /v1/answer). Only a human tap
// answers (D6). The question is named by its conversation, its id and the
// revision the device showed: an answer to an older revision is refused
// with stale-revision, so a human never approves wording they did not see.
type AnswerRequest struct {
	Header
	Conversation string `json:"conversation"`
	Question     string `json:"question"`
	Revision     int64  `json:"revision"`
	// OptionIDs is ["yes"] or ["no"] for a yes-no question and one option
	// id for a choice question.
	OptionIDs []string `json:"optionIds,omitempty"`
	// Text answers a line question: 1 to 32768 bytes (X4).
	Text string `json:"text,omitempty"`
	// Values answers a form question: every field id, each 1 to 32768 bytes.
	Values map[string]string `json:"values,omitempty"`
	// Always, with "yes" to a question that offers it (and after the
	// device's second tap, D7), remembers the offered scope so later calls
	// in it are let through unasked.
	Always bool `json:"always,omitempty"`
	// Reason is an optional note from the human, at most 2048 bytes.
	Reason string `json:"reason,omitempty"`
}

// SendRequest sends text into a conversation (POST /v1/send). Steer asks
// the agent to take the text into the turn it is running rather than
// after it.
type SendRequest struct {
	Header
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
	Steer        bool   `json:"steer,omitempty"`
}

// AbortRequest stops the turn running in a conversation (POST /v1/abort)
// or, with Question, withdraws that open question.
type AbortRequest struct {
	Header
	Conversation string `json:"conversation"`
	Question     string `json:"question,omitempty"`
}

// ActionRequest taps a belt button (POST /v1/action). Conversation, when
// given, is where the tap happened.
type ActionRequest struct {
	Header
	Action       string `json:"action"`
	Conversation string `json:"conversation,omitempty"`
}

// RenameRequest renames exactly one of a space, a tab or a conversation
// (POST /v1/rename). Title is 1 to 256 bytes.
type RenameRequest struct {
	Header
	Space        string `json:"space,omitempty"`
	Tab          string `json:"tab,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Title        string `json:"title"`
}

// CloseRequest closes a conversation (POST /v1/close); ReopenRequest opens
// a closed one again (POST /v1/reopen).
type CloseRequest struct {
	Header
	Conversation string `json:"conversation"`
}

// ReopenRequest: see CloseRequest.
type ReopenRequest struct {
	Header
	Conversation string `json:"conversation"`
}

// StarterRequest taps a starter (POST /v1/starter), which begins a new
// conversation; the reply names it.
type StarterRequest struct {
	Header
	Starter string `json:"starter"`
}

// WriteReply is the body of a write's 200 reply.
type WriteReply struct {
	RequestID string `json:"requestId"`
	// Conversation is the conversation the write touched or, for a starter
	// or a belt button, the one its command reports into.
	Conversation string `json:"conversation,omitempty"`
	// Replayed is set when the request id was carried out before: nothing
	// was done again, and this is the first reply.
	Replayed bool `json:"replayed,omitempty"`
}

// ToolRef names the tool call a question gates, for "always allow" grants.
type ToolRef struct {
	Name    string `json:"name"`              // e.g. "Bash"
	Command string `json:"command,omitempty"` // e.g. "git status --short"
}

// Scope is what an "always allow" answer lets through unasked: calls of
// Tool whose command starts with the words of CommandPrefix (every call of
// Tool when it is empty), for DurationSeconds. Text says it for a human.
type Scope struct {
	Tool            string `json:"tool"`
	CommandPrefix   string `json:"commandPrefix,omitempty"`
	DurationSeconds int64  `json:"durationSeconds"`
	Text            string `json:"text"`
}

// AskRequest asks a question (POST /v1/ask). A repeat with the same
// request id, or with the same tool-call key (D9), attaches to the question
// already asked instead of asking twice.
type AskRequest struct {
	RequestID string   `json:"requestId"`
	Kind      string   `json:"kind"`
	Title     string   `json:"title"`
	Rationale string   `json:"rationale,omitempty"`
	Options   []Option `json:"options,omitempty"`
	Fields    []Field  `json:"fields,omitempty"`
	ToolCall  string   `json:"toolCall,omitempty"`
	Tool      *ToolRef `json:"tool,omitempty"`
	// TimeoutSeconds, when above 0, denies the question by default once it
	// has waited that long.
	TimeoutSeconds int64 `json:"timeoutSeconds,omitempty"`
	// WaitSeconds is how long this request may wait for the decision
	// before the agent replies "pending" (1 to MaxAskWait; 0 means
	// MaxAskWait).
	WaitSeconds int64 `json:"waitSeconds,omitempty"`
	// Conversation, when set, is the open conversation to ask in (one a
	// local program opened, LocalOpenPath); otherwise the agent's own.
	Conversation string `json:"conversation,omitempty"`
	// Shortened says the asker cleaned or cut the title or rationale
	// before sending it (a hostile title, a tool's input too long for the
	// rationale): the card carries the "Text shortened" mark (X3).
	Shortened bool `json:"shortened,omitempty"`
	// Detail is the whole text the question is about, as a yes would run
	// it (a tool's command, a file's content), up to DetailBytes: the card
	// shows it on a tap, while the rationale shows its head and tail.
	Detail string `json:"detail,omitempty"`
}

// WithoutExtensions is r as an agent from before the shortened and detail
// fields takes it: ok when code and message, the agent's refusal of r, say
// it did not know them (an unknown field, or a body over the old cap), so
// asking again without them may succeed. The rationale's own "bytes not
// shown" line still tells the reader what is left out.
func (a AskRequest) WithoutExtensions(code, message string) (AskRequest, bool) {
	if !a.Shortened && a.Detail == "" {
		return a, false
	}
	unknown := code == CodeBadRequest && (strings.Contains(message, `"shortened"`) || strings.Contains(message, `"detail"`))
	if !unknown && code != CodeBodyTooLarge {
		return a, false
	}
	a.Shortened, a.Detail = false, ""
	return a, true
}

// Statuses of an asked question.
const (
	StatusPending   = "pending"
	StatusAnswered  = "answered"
	StatusTimedOut  = "timed-out" // denied by default
	StatusWithdrawn = "withdrawn" // aborted, closed, or the asker stopped waiting
)

// AskReply is the state of an asked question.
type AskReply struct {
	Question     string `json:"question"`
	Conversation string `json:"conversation"`
	Status       string `json:"status"`
	// Existing is set when the question was asked before (same request id
	// or tool-call key) and this reply is about that question.
	Existing bool `json:"existing,omitempty"`
	// The answer, when Status is answered.
	OptionIDs []string          `json:"optionIds,omitempty"`
	Text      string            `json:"text,omitempty"`
	Values    map[string]string `json:"values,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Always    bool              `json:"always,omitempty"`
	// Grant is the id of the "always allow" grant that answered yes
	// without asking anyone.
	Grant string `json:"grant,omitempty"`
}

// Grant is a remembered "always allow" (GET /v1/grants).
type Grant struct {
	ID       string `json:"id"`
	Scope    Scope  `json:"scope"`
	Question string `json:"question"` // the question whose answer made it
	Granted  string `json:"granted"`  // RFC 3339
	Expires  string `json:"expires"`  // RFC 3339
}

// GrantsReply lists the grants in force.
type GrantsReply struct {
	Grants []Grant `json:"grants"`
}

// RevokeRequest revokes one grant by id, or all of them.
type RevokeRequest struct {
	Grant string `json:"grant,omitempty"`
	All   bool   `json:"all,omitempty"`
}

// RevokeReply says how many grants were revoked.
type RevokeReply struct {
	Revoked int `json:"revoked"`
}

// Request is a decoded ask, revoke or local program's body: each checks
// itself. A write's body is a WriteRequest, checked by its registry row
// (Write.Check).
type Request interface {
	// Validate says, in a sentence for the user, what is wrong with the
	// request on its own, before the agent looks at its state.
	Validate() error
}

// ErrBodyTooLarge reports a request body over its cap (WriteCap, AskCap).
var ErrBodyTooLarge = errors.New("the request body is over its size cap")

// DecodeRequest reads a request body of at most WriteCap bytes (AskCap
// for an ask; length is its Content-Length, or -1), decodes it into v with
// the closed schema and validates it.
func DecodeRequest(r io.Reader, length int64, v Request) error {
	limit := WriteCap
	if _, ok := v.(*AskRequest); ok {
		limit = AskCap // a question may carry a tool's whole input
	}
	if err := ReadRequest(r, length, limit, v); err != nil {
		return err
	}
	return v.Validate()
}

// ReadRequest reads a request body of at most limit bytes (length is its
// Content-Length, or -1) and decodes it into v with the closed schema,
// without checking what it says: a body over limit is ErrBodyTooLarge.
func ReadRequest(r io.Reader, length int64, limit int, v any) error {
	data, err := ReadCapped(r, length, limit)
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%w: the cap is %d bytes; send less", ErrBodyTooLarge, limit)
	}
	if err != nil {
		return err
	}
	if err := unmarshalClosed(data, v); err != nil {
		return fmt.Errorf("the request body is not valid: %w", err)
	}
	return nil
}

// DecodeReply decodes a reply to a write, an ask or a grants read.
func DecodeReply(r io.Reader, length int64, v any) error {
	data, err := ReadCapped(r, length, ReplyCap)
	if err != nil {
		return err
	}
	return unmarshalClosed(data, v)
}

func checkID(what, id string) error {
	if !sanitize.ValidID(id) {
		return fmt.Errorf("%s %q is not a valid id: use 1 to 128 bytes without spaces, control characters, '/', '?' or '#'", what, clip(id))
	}
	return nil
}

func checkOptionalID(what, id string) error {
	if id == "" {
		return nil
	}
	return checkID(what, id)
}

// checkText applies X4's rule for text sent to an agent.
func checkText(what, s string) error {
	if err := sanitize.CheckSend(s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// checkLine checks a one-line title or label of at most limit bytes: valid
// UTF-8, not blank, no control characters.
func checkLine(what, s string, limit int) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("the %s is empty; give it at least one character", what)
	case len(s) > limit:
		return fmt.Errorf("the %s is %d bytes; the limit is %d", what, len(s), limit)
	case !utf8.ValidString(s):
		return fmt.Errorf("the %s is not valid UTF-8", what)
	}
	if clean, changed := sanitize.Line(s, limit); changed || clean != s {
		return fmt.Errorf("the %s contains control or invisible characters; remove them", what)
	}
	return nil
}

// validateAnswer checks the fields of an answer after its request id (validators).
func validateAnswer(a *AnswerRequest) error {
	if err := checkID("conversation", a.Conversation); err != nil {
		return err
	}
	if err := checkID("question", a.Question); err != nil {
		return err
	}
	if a.Revision < 0 {
		return errors.New("the revision is negative; send the revision the question showed")
	}
	kinds := 0
	if len(a.OptionIDs) > 0 {
		kinds++
		for _, id := range a.OptionIDs {
			if err := checkID("option", id); err != nil {
				return err
			}
		}
	}
	if a.Text != "" {
		kinds++
		if err := checkText("the answer", a.Text); err != nil {
			return err
		}
	}
	if a.Values != nil {
		kinds++
		if len(a.Values) == 0 {
			return errors.New("the form answer has no values; fill in every field")
		}
		for k, v := range a.Values {
			if err := checkID("field", k); err != nil {
				return err
			}
			if err := checkText(fmt.Sprintf("field %q", k), v); err != nil {
				return err
			}
		}
	}
	if kinds != 1 {
		return errors.New("an answer carries exactly one of optionIds, text or values")
	}
	if len(a.Reason) > ReasonBytes || !utf8.ValidString(a.Reason) {
		return fmt.Errorf("the reason must be valid UTF-8 of at most %d bytes", ReasonBytes)
	}
	if a.Always && (len(a.OptionIDs) != 1 || a.OptionIDs[0] != Yes) {
		return errors.New(`"always" goes only with the answer "yes"`)
	}
	return nil
}

// validateSend checks the fields of a send after its request id (validators).
func validateSend(s *SendRequest) error {
	if err := checkID("conversation", s.Conversation); err != nil {
		return err
	}
	return checkText("the text", s.Text)
}

// validateAbort checks the fields of an abort after its request id (validators).
func validateAbort(a *AbortRequest) error {
	if err := checkID("conversation", a.Conversation); err != nil {
		return err
	}
	return checkOptionalID("question", a.Question)
}

// validateAction checks the fields of a belt-button tap after its request id (validators).
func validateAction(a *ActionRequest) error {
	if err := checkID("action", a.Action); err != nil {
		return err
	}
	return checkOptionalID("conversation", a.Conversation)
}

// validateRename checks the fields of a rename after its request id (validators).
func validateRename(r *RenameRequest) error {
	n := 0
	for _, f := range []struct{ what, id string }{{"space", r.Space}, {"tab", r.Tab}, {"conversation", r.Conversation}} {
		if f.id != "" {
			n++
			if err := checkID(f.what, f.id); err != nil {
				return err
			}
		}
	}
	if n != 1 {
		return errors.New("a rename names exactly one of space, tab or conversation")
	}
	return checkLine("title", r.Title, sanitize.TitleBytes)
}

// validateClose checks the fields of a close after its request id (validators).
func validateClose(c *CloseRequest) error {
	return checkID("conversation", c.Conversation)
}

// validateReopen checks the fields of a reopen after its request id (validators).
func validateReopen(c *ReopenRequest) error {
	return checkID("conversation", c.Conversation)
}

// validateStarter checks the fields of a starter tap after its request id (validators).
func validateStarter(s *StarterRequest) error {
	return checkID("starter", s.Starter)
}

// MaxAskOptions bounds the options of a choice and the fields of a form.
const MaxAskOptions = 32

// Validate implements Request.
func (a *AskRequest) Validate() error {
	if err := checkID("requestId", a.RequestID); err != nil {
		return err
	}
	if err := checkLine("title", a.Title, sanitize.TitleBytes); err != nil {
		return err
	}
	if len(a.Rationale) > sanitize.RationaleBytes || !utf8.ValidString(a.Rationale) {
		return fmt.Errorf("the rationale must be valid UTF-8 of at most %d bytes", sanitize.RationaleBytes)
	}
	if len(a.Detail) > DetailBytes || !utf8.ValidString(a.Detail) {
		return fmt.Errorf("the detail must be valid UTF-8 of at most %d bytes", DetailBytes)
	}
	if err := checkOptionalID("toolCall", a.ToolCall); err != nil {
		return err
	}
	if err := checkOptionalID("conversation", a.Conversation); err != nil {
		return err
	}
	if a.TimeoutSeconds < 0 || a.WaitSeconds < 0 || a.WaitSeconds > MaxAskWait {
		return fmt.Errorf("timeoutSeconds must be 0 or more and waitSeconds 0 to %d", MaxAskWait)
	}
	if a.Tool != nil {
		if err := checkLine("tool name", a.Tool.Name, sanitize.LabelBytes); err != nil {
			return err
		}
		if len(a.Tool.Command) > sanitize.SendMaxBytes || !utf8.ValidString(a.Tool.Command) {
			return fmt.Errorf("the tool's command must be valid UTF-8 of at most %d bytes", sanitize.SendMaxBytes)
		}
	}
	switch a.Kind {
	case AskYesNo, AskLine:
		if len(a.Options) > 0 || len(a.Fields) > 0 {
			return fmt.Errorf("a %s question has no options or fields", a.Kind)
		}
	case AskChoice:
		if len(a.Fields) > 0 || len(a.Options) < 2 || len(a.Options) > MaxAskOptions {
			return fmt.Errorf("a choice question has 2 to %d options and no fields", MaxAskOptions)
		}
		return checkPairs("option", len(a.Options), func(i int) (string, string) { return a.Options[i].ID, a.Options[i].Label })
	case AskForm:
		if len(a.Options) > 0 || len(a.Fields) < 1 || len(a.Fields) > MaxAskOptions {
			return fmt.Errorf("a form question has 1 to %d fields and no options", MaxAskOptions)
		}
		return checkPairs("field", len(a.Fields), func(i int) (string, string) { return a.Fields[i].ID, a.Fields[i].Label })
	default:
		return fmt.Errorf("unknown question kind %q; use yes-no, choice, line or form", clip(a.Kind))
	}
	return nil
}

func checkPairs(what string, n int, at func(int) (id, label string)) error {
	seen := map[string]bool{}
	for i := range n {
		id, label := at(i)
		if err := checkID(what, id); err != nil {
			return err
		}
		if seen[id] {
			return fmt.Errorf("%s id %q is used twice", what, id)
		}
		seen[id] = true
		if err := checkLine(what+" label", label, sanitize.LabelBytes); err != nil {
			return err
		}
	}
	return nil
}

// Validate implements Request.
func (r *RevokeRequest) Validate() error {
	if r.All == (r.Grant != "") {
		return errors.New(`a revoke names one grant, or sets "all"`)
	}
	return checkOptionalID("grant", r.Grant)
}
