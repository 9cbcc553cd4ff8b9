package durable

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/sanitize"
	"github.com/collie-linux/collie/internal/wire"
)

// Limits that keep a board's snapshot under its 4 MiB cap (X4) however
// long the agent runs: old items and closed conversations are dropped
// first. Text is counted twice, for the worst case of JSON escaping.
const (
	MaxItems         = 200        // per conversation
	MaxConversations = 100        // closed ones are dropped first
	textBudget       = 1536 << 10 // bytes of text over the whole board
	itemOverhead     = 160        // JSON around an item
	keepDecided      = 1024       // decided questions remembered (D9, already-decided)
	orphanAfter      = 2 * time.Minute
)

// Hooks are the agent's own work behind the writes a board cannot do by
// itself. They run without the board's lock held, one write at a time.
// Each may return an *Error to refuse.
type Hooks struct {
	// Action runs belt button id; its output goes into conversation conv.
	Action func(id, conv string) error
	// Starter runs starter id in a new conversation and returns that
	// conversation's id.
	Starter func(id string) (conv string, err error)
	// Abort stops what runs in conv and reports whether anything did.
	Abort func(conv string) bool
}

// BoardOptions configure a Board.
type BoardOptions struct {
	Space, Tab wire.Space // id and title of the one space and tab; Tabs is ignored
	// Main is the conversation questions from local programs go to.
	Main struct{ ID, Title string }
	// AllowAlways lets questions that name a tool offer "always allow"
	// (D7), for AlwaysFor each time.
	AllowAlways bool
	AlwaysFor   time.Duration
	// Grants keeps "always allow" grants across restarts; nil keeps them
	// in memory only.
	Grants GrantStore
	Hooks  Hooks
	Log    *slog.Logger
}

// Board is an agent's state — one space and tab of conversations with
// their items and open questions, the belt and the starters — and the
// protocol's writes on it. It is the App of a Server and its snapshot
// source.
type Board struct {
	srv  *Server
	opts BoardOptions
	log  *slog.Logger

	mu       sync.Mutex
	space    wire.Space
	tab      wire.Tab
	convs    []*conv // in order of creation
	byID     map[string]*conv
	belt     []wire.Button
	starters []wire.Starter
	seq      map[string]int64
	text     int // bytes of text held, see textBudget

	questions map[string]*question // by conversation + "\x00" + question id
	byRequest map[string]*question // ask request id
	byKey     map[string]*question // tool-call key (D9)
	decided   []*question          // oldest first, up to keepDecided

	grants *grantSet
	stop   chan struct{}
}

type conv struct {
	wire.Conversation // Items, Title, Closed; Questions unused
	open              []*question
	sizes             []int // text bytes of each item
}

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

// NewBoard makes a board, attaches it to srv as its App and snapshot
// source, and loads the grants.
func NewBoard(srv *Server, o BoardOptions) (*Board, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.AlwaysFor <= 0 {
		o.AlwaysFor = time.Hour
	}
	b := &Board{
		srv: srv, opts: o, log: o.Log,
		space:     wire.Space{ID: o.Space.ID, Title: o.Space.Title},
		tab:       wire.Tab{ID: o.Tab.ID, Title: o.Tab.Title},
		byID:      map[string]*conv{},
		seq:       map[string]int64{},
		questions: map[string]*question{},
		byRequest: map[string]*question{},
		byKey:     map[string]*question{},
		stop:      make(chan struct{}),
	}
	for _, id := range []string{o.Space.ID, o.Tab.ID, o.Main.ID} {
		if !sanitize.ValidID(id) {
			return nil, fmt.Errorf("the board's id %q is not valid", id)
		}
	}
	g, err := loadGrants(o.Grants)
	if err != nil {
		return nil, err
	}
	b.grants = g
	if err := b.AddConversation(o.Main.ID, o.Main.Title); err != nil {
		return nil, err
	}
	srv.SetApp(b)
	go b.janitor()
	return b, nil
}

// Stop stops the board's background work.
func (b *Board) Stop() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
}

// changed must be called with b.mu held after every change.
func (b *Board) changed() { b.srv.Changed() }

// nextID returns prefix and the next number for it: q1, q2, … and i1, …
func (b *Board) nextID(prefix string) string {
	b.seq[prefix]++
	return prefix + strconv.FormatInt(b.seq[prefix], 10)
}

// Snapshot implements SnapshotSource.
func (b *Board) Snapshot() *wire.Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	tab := b.tab
	tab.Conversations = make([]wire.Conversation, 0, len(b.convs))
	for _, c := range b.convs {
		wc := c.Conversation
		wc.Items = slices.Clone(c.Items)
		for i := range wc.Items {
			if t := wc.Items[i].Tool; t != nil {
				cp := *t
				wc.Items[i].Tool = &cp
			}
		}
		wc.Questions = nil
		for _, q := range c.open {
			wq := q.q
			wq.Options, wq.Fields = slices.Clone(wq.Options), slices.Clone(wq.Fields)
			if wq.AlwaysScope != nil {
				sc := *wq.AlwaysScope
				wq.AlwaysScope = &sc
			}
			wc.Questions = append(wc.Questions, wq)
		}
		tab.Conversations = append(tab.Conversations, wc)
	}
	sp := b.space
	sp.Tabs = []wire.Tab{tab}
	return &wire.Snapshot{Spaces: []wire.Space{sp}, Belt: slices.Clone(b.belt), Starters: slices.Clone(b.starters)}
}

// SetBelt sets the belt buttons (at most wire.MaxBelt, D2).
func (b *Board) SetBelt(belt []wire.Button) error {
	if len(belt) > wire.MaxBelt {
		return fmt.Errorf("%d belt buttons; an agent shows at most %d", len(belt), wire.MaxBelt)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.belt = slices.Clone(belt)
	b.changed()
	return nil
}

// SetStarters sets the starters.
func (b *Board) SetStarters(st []wire.Starter) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starters = slices.Clone(st)
	b.changed()
}

// AddConversation adds an open conversation with no items. Its id must be
// new.
func (b *Board) AddConversation(id, title string) error {
	if !sanitize.ValidID(id) {
		return fmt.Errorf("the conversation id %q is not valid", id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.byID[id]; ok {
		return fmt.Errorf("a conversation %q exists already", id)
	}
	title, _ = sanitize.Line(title, sanitize.TitleBytes)
	c := &conv{Conversation: wire.Conversation{ID: id, Title: title}}
	b.convs = append(b.convs, c)
	b.byID[id] = c
	b.trim()
	b.changed()
	return nil
}

// NewConversationID returns an id no conversation has, made from prefix.
func (b *Board) NewConversationID(prefix string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		id := b.nextID(prefix + "-")
		if _, ok := b.byID[id]; !ok {
			return id
		}
	}
}

// AppendItem adds an item to conversation cv and returns its id (made up
// when it.ID is empty). The item's text is cleaned and cut here, so the
// snapshot never depends on the bridge's cleaning.
func (b *Board) AppendItem(cv string, it wire.Item) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.byID[cv]
	if !ok {
		return "", fmt.Errorf("no conversation %q", cv)
	}
	if it.ID == "" {
		it.ID = b.nextID("i")
	}
	cleanItem(&it)
	c.Items = append(c.Items, it)
	n := itemText(&it)
	c.sizes = append(c.sizes, n)
	b.text += n
	b.trim()
	b.changed()
	return it.ID, nil
}

// UpdateItem changes item id of conversation cv in place; the item is
// cleaned again afterwards. It is not an error when the item was dropped
// to keep the snapshot small.
func (b *Board) UpdateItem(cv, id string, fn func(*wire.Item)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, ok := b.byID[cv]
	if !ok {
		return
	}
	for i := range c.Items {
		if c.Items[i].ID == id {
			if t := c.Items[i].Tool; t != nil {
				cp := *t
				c.Items[i].Tool = &cp
			}
			fn(&c.Items[i])
			c.Items[i].ID = id
			cleanItem(&c.Items[i])
			n := itemText(&c.Items[i])
			b.text += n - c.sizes[i]
			c.sizes[i] = n
			b.trim()
			b.changed()
			return
		}
	}
}

func cleanItem(it *wire.Item) {
	it.Role, _ = sanitize.Line(it.Role, sanitize.LabelBytes)
	switch it.Kind {
	case wire.KindText:
		it.Text, _ = sanitize.Block(it.Text, sanitize.MessageBytes)
	case wire.KindMarkdown, wire.KindCode:
		it.Text, _ = sanitize.Block(it.Text, sanitize.CodeBytes)
	case wire.KindLink:
		it.Text, _ = sanitize.Line(it.Text, sanitize.TitleBytes)
	}
	if t := it.Tool; t != nil {
		t.Name, _ = sanitize.Line(t.Name, sanitize.TitleBytes)
		t.Summary, _ = sanitize.Block(t.Summary, sanitize.SummaryBytes)
		t.Output, _ = sanitize.Block(t.Output, sanitize.OutputBytes)
		t.Status, _ = sanitize.Line(t.Status, sanitize.LabelBytes)
	}
}

func itemText(it *wire.Item) int {
	n := itemOverhead + 2*(len(it.Text)+len(it.URL)+len(it.Role))
	if t := it.Tool; t != nil {
		n += 2 * (len(t.Name) + len(t.Summary) + len(t.Output) + len(t.Status))
	}
	return n
}

// trim drops what keeps the board over its limits: the oldest items of a
// conversation over MaxItems, the oldest closed conversations over
// MaxConversations, and then the oldest items anywhere while the text is
// over budget. Must be called with b.mu held.
func (b *Board) trim() {
	for _, c := range b.convs {
		if over := len(c.Items) - MaxItems; over > 0 {
			b.dropItems(c, over)
		}
	}
	// Over the limit, the oldest closed conversations go first, then the
	// oldest with no open question; the main one stays.
	for len(b.convs) > MaxConversations {
		i := slices.IndexFunc(b.convs, func(c *conv) bool { return c.Closed && c.ID != b.opts.Main.ID })
		if i < 0 {
			i = slices.IndexFunc(b.convs, func(c *conv) bool { return len(c.open) == 0 && c.ID != b.opts.Main.ID })
		}
		if i < 0 {
			break
		}
		b.removeConv(i)
	}
	for b.text > textBudget {
		dropped := false
		for _, c := range b.convs {
			if len(c.Items) > 1 || len(c.Items) == 1 && b.text-c.sizes[0] > 0 {
				b.dropItems(c, 1)
				dropped = true
				break
			}
		}
		if !dropped {
			break
		}
	}
}

func (b *Board) dropItems(c *conv, n int) {
	for _, s := range c.sizes[:n] {
		b.text -= s
	}
	c.Items = slices.Delete(c.Items, 0, n)
	c.sizes = slices.Delete(c.sizes, 0, n)
}

func (b *Board) removeConv(i int) {
	c := b.convs[i]
	for _, s := range c.sizes {
		b.text -= s
	}
	delete(b.byID, c.ID)
	b.convs = slices.Delete(b.convs, i, i+1)
}

// note adds a text item from the agent to conversation cv; b.mu held.
func (b *Board) note(cv, role, text string) {
	c, ok := b.byID[cv]
	if !ok {
		return
	}
	it := wire.Item{ID: b.nextID("i"), Kind: wire.KindText, Role: role, Text: text}
	cleanItem(&it)
	c.Items = append(c.Items, it)
	n := itemText(&it)
	c.sizes = append(c.sizes, n)
	b.text += n
	b.trim()
}

// conversation returns the conversation a write names, or its refusal.
func (b *Board) conversation(id string) (*conv, error) {
	c, ok := b.byID[id]
	if !ok {
		return nil, Refuse(http.StatusNotFound, wire.CodeUnknownTarget,
			"there is no conversation %q; it may have been dropped as old; reload the agent's state", id)
	}
	return c, nil
}

func (b *Board) openConversation(id string) (*conv, error) {
	c, err := b.conversation(id)
	if err != nil {
		return nil, err
	}
	if c.Closed {
		return nil, Refuse(http.StatusConflict, wire.CodeClosed, "the conversation %q is closed; reopen it first", id)
	}
	return c, nil
}

// Send implements App: the text becomes a message from the user in the
// conversation. collie-agent runs fixed commands that take no input, so a
// steer is recorded the same way.
func (b *Board) Send(r *wire.SendRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, err := b.openConversation(r.Conversation); err != nil {
		return wire.WriteReply{}, err
	}
	b.note(r.Conversation, "user", r.Text)
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Rename implements App.
func (b *Board) Rename(r *wire.RenameRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	title, _ := sanitize.Line(r.Title, sanitize.TitleBytes)
	switch {
	case r.Space != "":
		if r.Space != b.space.ID {
			return wire.WriteReply{}, Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no space %q; reload the agent's state", r.Space)
		}
		b.space.Title = title
	case r.Tab != "":
		if r.Tab != b.tab.ID {
			return wire.WriteReply{}, Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no tab %q; reload the agent's state", r.Tab)
		}
		b.tab.Title = title
	default:
		c, err := b.conversation(r.Conversation)
		if err != nil {
			return wire.WriteReply{}, err
		}
		c.Title = title
	}
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Close implements App: the conversation is closed and its open questions
// are withdrawn.
func (b *Board) Close(r *wire.CloseRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.conversation(r.Conversation)
	if err != nil {
		return wire.WriteReply{}, err
	}
	for len(c.open) > 0 {
		b.decide(c.open[0], wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the conversation was closed"})
	}
	c.Closed = true
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Reopen implements App.
func (b *Board) Reopen(r *wire.ReopenRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c, err := b.conversation(r.Conversation)
	if err != nil {
		return wire.WriteReply{}, err
	}
	c.Closed = false
	b.changed()
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Abort implements App: with a question, withdraw it; without, stop what
// runs in the conversation.
func (b *Board) Abort(r *wire.AbortRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	if _, err := b.conversation(r.Conversation); err != nil {
		b.mu.Unlock()
		return wire.WriteReply{}, err
	}
	if r.Question != "" {
		defer b.mu.Unlock()
		q, err := b.pending(r.Conversation, r.Question)
		if err != nil {
			return wire.WriteReply{}, err
		}
		b.decide(q, wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the question was withdrawn from a paired device"})
		b.changed()
		return wire.WriteReply{Conversation: r.Conversation}, nil
	}
	b.mu.Unlock()
	if b.opts.Hooks.Abort == nil || !b.opts.Hooks.Abort(r.Conversation) {
		return wire.WriteReply{}, Refuse(http.StatusConflict, wire.CodeNothingRunning, "nothing is running in conversation %q", r.Conversation)
	}
	return wire.WriteReply{Conversation: r.Conversation}, nil
}

// Action implements App.
func (b *Board) Action(r *wire.ActionRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	known := slices.ContainsFunc(b.belt, func(x wire.Button) bool { return x.ID == r.Action })
	cv := r.Conversation
	if cv == "" {
		cv = b.opts.Main.ID
	}
	_, err := b.openConversation(cv)
	b.mu.Unlock()
	if !known || b.opts.Hooks.Action == nil {
		return wire.WriteReply{}, Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no belt button %q; reload the agent's state", r.Action)
	}
	if err != nil {
		return wire.WriteReply{}, err
	}
	if err := b.opts.Hooks.Action(r.Action, cv); err != nil {
		return wire.WriteReply{}, err
	}
	return wire.WriteReply{Conversation: cv}, nil
}

// Starter implements App.
func (b *Board) Starter(r *wire.StarterRequest) (wire.WriteReply, error) {
	b.mu.Lock()
	known := slices.ContainsFunc(b.starters, func(x wire.Starter) bool { return x.ID == r.Starter })
	b.mu.Unlock()
	if !known || b.opts.Hooks.Starter == nil {
		return wire.WriteReply{}, Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no starter %q; reload the agent's state", r.Starter)
	}
	cv, err := b.opts.Hooks.Starter(r.Starter)
	if err != nil {
		return wire.WriteReply{}, err
	}
	return wire.WriteReply{Conversation: cv}, nil
}

func qkey(cv, id string) string { return cv + "\x00" + id }

// pending returns an open question, or why a write cannot touch it; b.mu
// held.
func (b *Board) pending(cv, id string) (*question, error) {
	q, ok := b.questions[qkey(cv, id)]
	if !ok {
		return nil, Refuse(http.StatusNotFound, wire.CodeUnknownQuestion,
			"there is no question %q in conversation %q; it may be long decided; reload the agent's state", id, cv)
	}
	if q.reply.Status != wire.StatusPending {
		return nil, Refuse(http.StatusConflict, wire.CodeAlreadyDecided, "the question %q was already decided (%s); nothing was changed", id, describe(q))
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

// Answer implements App (D6: only a paired device's tap reaches it).
func (b *Board) Answer(r *wire.AnswerRequest, t Transport) (wire.WriteReply, error) {
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
		return wire.WriteReply{}, Refuse(http.StatusConflict, wire.CodeStaleRevision,
			"the question %q changed since it was shown (revision %d, not %d); reload it and answer again", r.Question, q.q.Revision, r.Revision)
	}
	if err := fits(q, r); err != nil {
		return wire.WriteReply{}, err
	}
	if r.Always {
		switch {
		case t.Remote:
			return wire.WriteReply{}, Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer,
				"\"always allow\" is never taken over the token transport (K3); answer yes or no")
		case !q.q.AllowAlways || q.q.AlwaysScope == nil:
			return wire.WriteReply{}, Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer,
				"the question %q does not offer \"always allow\"; answer yes or no", r.Question)
		}
	}
	rep := wire.AskReply{Status: wire.StatusAnswered, OptionIDs: r.OptionIDs, Text: r.Text, Values: r.Values, Reason: r.Reason, Always: r.Always}
	if r.Always {
		g, err := b.grants.add(*q.q.AlwaysScope, q.q.ID, time.Now())
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
		return Refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer, format, a...)
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
	title, _ := sanitize.Line(r.Title, sanitize.TitleBytes)
	rationale, _ := sanitize.Block(r.Rationale, sanitize.RationaleBytes)
	q := &question{
		conv: cv, done: make(chan struct{}), lastPoll: time.Now(),
		q: wire.Question{
			ID: b.nextID("q"), Kind: r.Kind, Title: title, Rationale: rationale, Revision: 1,
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
		sc := scopeFor(*r.Tool, b.opts.AlwaysFor)
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

// Ask implements App.
func (b *Board) Ask(ctx context.Context, r *wire.AskRequest, wait time.Duration) (wire.AskReply, error) {
	b.mu.Lock()
	q, existing := b.byRequest[r.RequestID]
	if !existing && r.ToolCall != "" {
		q, existing = b.byKey[r.ToolCall]
	}
	if existing && q.orphaned {
		existing = false // nobody saw its answer: ask again
	}
	switch {
	case existing:
		// D9: the tool call was asked about before; if its wording changed
		// while it waits, the device must see the new wording before a
		// tap can count.
		if q.reply.Status == wire.StatusPending && q.req != nil && !sameWording(q.req, r) && r.RequestID != q.req.RequestID {
			title, _ := sanitize.Line(r.Title, sanitize.TitleBytes)
			rationale, _ := sanitize.Block(r.Rationale, sanitize.RationaleBytes)
			if title != q.q.Title || rationale != q.q.Rationale {
				q.q.Title, q.q.Rationale = title, rationale
				q.q.Revision++
				b.changed()
			}
		}
	default:
		if _, err := b.openConversation(b.opts.Main.ID); err != nil {
			b.mu.Unlock()
			return wire.AskReply{}, err
		}
		if g, ok := b.grantFor(r); ok {
			q = b.newQuestion(b.opts.Main.ID, r, true)
			b.decide(q, wire.AskReply{Status: wire.StatusAnswered, OptionIDs: []string{wire.Yes}, Grant: g.ID,
				Reason: "allowed by the always-allow grant " + g.ID + ": " + g.Scope.Text})
		} else {
			q = b.newQuestion(b.opts.Main.ID, r, true)
			b.log.Info("question asked", "question", q.q.ID, "kind", q.q.Kind, "tool_call", q.q.ToolCall, "timeout_s", r.TimeoutSeconds)
		}
		b.changed()
	}
	q.waiters++
	q.lastPoll = time.Now()
	b.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-q.done:
	case <-t.C:
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	q.waiters--
	q.lastPoll = time.Now()
	rep := q.reply
	rep.Existing = existing
	rep.OptionIDs = slices.Clone(rep.OptionIDs)
	rep.Values = maps.Clone(rep.Values)
	return rep, nil
}

func sameWording(a, b *wire.AskRequest) bool {
	return a.Title == b.Title && a.Rationale == b.Rationale
}

// grantFor finds a grant that lets r through unasked; b.mu held.
func (b *Board) grantFor(r *wire.AskRequest) (wire.Grant, bool) {
	if r.Kind != wire.AskYesNo || r.Tool == nil {
		return wire.Grant{}, false
	}
	return b.grants.match(*r.Tool, time.Now())
}

// janitor withdraws questions whose asker stopped waiting: nothing would
// read their answer.
func (b *Board) janitor() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.mu.Lock()
			changed := false
			for _, c := range b.convs {
				for _, q := range slices.Clone(c.open) {
					if q.req != nil && q.waiters == 0 && now.Sub(q.lastPoll) > orphanAfter {
						q.orphaned = true
						b.decide(q, wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the program that asked stopped waiting"})
						changed = true
					}
				}
			}
			if changed {
				b.changed()
			}
			b.mu.Unlock()
		}
	}
}

// Grants implements App.
func (b *Board) Grants() wire.GrantsReply {
	b.mu.Lock()
	defer b.mu.Unlock()
	return wire.GrantsReply{Grants: b.grants.list(time.Now())}
}

// Revoke implements App.
func (b *Board) Revoke(r *wire.RevokeRequest) (wire.RevokeReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gone, err := b.grants.revoke(r.Grant, r.All)
	if err != nil {
		return wire.RevokeReply{}, err
	}
	if r.Grant != "" && len(gone) == 0 {
		return wire.RevokeReply{}, Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no grant %q; list them with: collie-agent grants", r.Grant)
	}
	for _, g := range gone {
		b.note(b.opts.Main.ID, "agent", "Always allow revoked: "+g.Scope.Text)
	}
	b.changed()
	return wire.RevokeReply{Revoked: len(gone)}, nil
}

// scopeFor is the "always allow" offer for a tool call: the tool, and the
// first word of its command (the second too when it is a subcommand such
// as "status" in "git status"), for d.
func scopeFor(t wire.ToolRef, d time.Duration) wire.Scope {
	sc := wire.Scope{Tool: t.Name, CommandPrefix: commandPrefix(t.Command), DurationSeconds: int64(d / time.Second)}
	what := "every " + t.Name + " call"
	if sc.CommandPrefix != "" {
		what = fmt.Sprintf("%s commands starting with %q (without shell operators)", t.Name, sc.CommandPrefix)
	}
	sc.Text = fmt.Sprintf("%s, for %s", what, humanDuration(d))
	sc.Text, _ = sanitize.Line(sc.Text, sanitize.TitleBytes)
	return sc
}

func commandPrefix(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	p := f[0]
	if len(f) > 1 && isSubcommand(f[1]) {
		p += " " + f[1]
	}
	if len(p) > 128 {
		p = p[:128]
	}
	return p
}

func isSubcommand(w string) bool {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// humanDuration says d the way a person would: "1 hour", "90 minutes".
func humanDuration(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute && d%time.Minute == 0:
		return plural(int64(d/time.Minute), "minute")
	}
	return plural(int64(d/time.Second), "second")
}
