// Package board is the reference agent's state and the protocol's writes
// on it: one space and tab of conversations with their items, the belt and
// the starters, and the questions asked by local programs (collie ask, the
// hook) or posed by the agent itself. A Board is the durable.App of a
// durable.Server and its snapshot source: it answers, sends, renames,
// closes, reopens and aborts; it runs belt buttons and starters through
// Hooks; it attaches a repeated ask to the question already asked (D9),
// lets a call through by an "always allow" grant (D7, package grants), and
// trims itself so that its snapshot stays under the cap (X4). Questions
// whose asker stopped waiting are withdrawn by a janitor.
package board

import (
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/grants"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Limits that keep a board's snapshot under its 4 MiB cap (X4) however
// long the agent runs: old items and closed conversations are dropped
// first. Text is counted twice, for the worst case of JSON escaping.
const (
	MaxItems         = 200        // per conversation
	MaxConversations = 100        // closed ones are dropped first
	textBudget       = 1536 << 10 // bytes of text over the whole board
	// detailBudget is what the open questions' details may take: with the
	// text budget, and JSON's escapes at most doubling either, the
	// snapshot stays under its cap.
	detailBudget = 1 << 20
	itemOverhead = 160  // JSON around an item
	keepDecided  = 1024 // decided questions remembered (D9, already-decided)
)

// Hooks are the agent's own work behind the writes a board cannot do by
// itself. They run without the board's lock held, one write at a time.
// Each may return a *durable.Error to refuse.
type Hooks struct {
	// Action runs belt button id; its output goes into conversation conv.
	Action func(id, conv string) error
	// Starter runs starter id in a new conversation and returns that
	// conversation's id.
	Starter func(id string) (conv string, err error)
	// Abort stops what runs in conv and reports whether anything did.
	Abort func(conv string) bool
}

// Options configure a Board.
type Options struct {
	Space, Tab wire.Space // id and title of the one space and tab; Tabs is ignored
	// Main is the conversation questions from local programs go to.
	Main struct{ ID, Title string }
	// AllowAlways lets questions that name a tool offer "always allow"
	// (D7), for AlwaysFor each time.
	AllowAlways bool
	AlwaysFor   time.Duration
	// Grants keeps "always allow" grants across restarts; nil keeps them
	// in memory only.
	Grants grants.Store
	Hooks  Hooks
	Log    *slog.Logger
}

// Board is an agent's state — one space and tab of conversations with
// their items and open questions, the belt and the starters — and the
// protocol's writes on it. It is the durable.App of a durable.Server
// and its snapshot source.
type Board struct {
	srv  *durable.Server
	opts Options
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

	grants *grants.Set
	stop   chan struct{}
}

type conv struct {
	wire.Conversation // Items, Title, Closed; Questions unused
	open              []*question
	sizes             []int // text bytes of each item
	local             bool  // opened by a local program (LocalOpen), which may close it
}

// New makes a board, attaches it to srv as its App and snapshot source,
// and loads the grants.
func New(srv *durable.Server, o Options) (*Board, error) {
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
	g, err := grants.Load(o.Grants)
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

// Snapshot implements durable.SnapshotSource.
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
