// Package loginhost hosts, in the bridge's process, one board per agent of
// an agent platform that logged in: a durable agent
// (durable.Server with a board.Board, "always allow" off) holding one
// conversation, the agent's questions. The bridge reads it through
// upstream.NewHosted, so it is shown, cleaned (X1) and pushed (D9) like
// any durable agent, and a paired device answers it through
// Bridge.Forward (D6); the agent API calls only its /v1/ask. Boards live
// in memory: after a restart an agent's waiting ask is asked again by its
// collie ask, as from any agent that restarted. A board is released when
// its agent has no live session left (Options.Live).
package loginhost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/cli/version"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Prefix starts the name of every hosted agent; sources.json cannot use
// it (sources.CheckName refuses nothing here, so the bridge refuses a
// clash when it attaches).
const Prefix = "raft."

// MaxBoards bounds the boards one bridge hosts at once; an agent's board
// is released when the agent has no live session left.
const MaxBoards = 256

// Attach shows a hosted agent on devices: the bridge reads it through
// client under name.
type Attach func(name string, client upstream.Waiter) error

// Options configure a Host.
type Options struct {
	Log    *slog.Logger
	Attach Attach
	// Detach stops showing the board called name (nil: nothing to do).
	Detach func(name string)
	// Live is a context that ends when the agent has no live session left
	// (loginservice.Store.WatchAgent); its board is released then. Nil: a
	// board lives until Close.
	Live func(parent context.Context, agent loginservice.AgentKey) (context.Context, context.CancelFunc)
}

// Host holds the boards, one per agent (loginservice.AgentKey: the platform
// server and the agent id exactly as signed). The name a board is shown
// under is a label only: two agents whose labels would collide get two
// boards under two labels, never one.
type Host struct {
	o Options

	mu     sync.Mutex
	boards map[loginservice.AgentKey]*hosted
	labels map[string]loginservice.AgentKey // the labels in use
	closed bool
}

type hosted struct {
	label string
	board *board.Board
	h     http.Handler // the agent's routes (durable.Server.Hosted)
	stop  context.CancelFunc
}

// New returns a host.
func New(o Options) *Host {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Host{o: o, boards: map[loginservice.AgentKey]*hosted{}, labels: map[string]loginservice.AgentKey{}}
}

// Name is the label an agent's board is shown under unless another
// agent's board already has it: Prefix, the agent's id in lower case (at
// most 40 bytes of it), and six hex digits of a digest of its server and
// id. It is a valid durable agent name (wire.ValidName).
func Name(id loginservice.Identity) string { return label(id.Key(), 3, 0) }

// label is Prefix, the agent's id in lower case (at most 40 bytes of it),
// 2*digits hex digits of the digest of its server and id, and "-n" when
// n > 1: within wire.MaxNameBytes (64) for 8 digits without n, or 3
// digits with n up to ten digits long.
func label(k loginservice.AgentKey, digits, n int) string {
	var b strings.Builder
	b.WriteString(Prefix)
	for _, c := range strings.ToLower(k.Agent) {
		if b.Len() == len(Prefix)+40 {
			break
		}
		if c < 0x80 && wire.NameByte(byte(c), false) {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Agent))
	b.WriteString("." + hex.EncodeToString(sum[:digits]))
	if n > 1 {
		fmt.Fprintf(&b, "-%d", n)
	}
	return b.String()
}

// freeLabel is the first label of k no other agent's board has: the
// usual one, a longer digest, then a counter. Callers hold h.mu.
func (h *Host) freeLabel(k loginservice.AgentKey) string {
	free := func(l string) bool { o, taken := h.labels[l]; return !taken || o == k }
	for _, digits := range []int{3, 8} {
		if l := label(k, digits, 0); free(l) {
			return l
		}
	}
	for n := 2; ; n++ {
		if l := label(k, 3, n); free(l) {
			return l
		}
	}
}

// Label is the name id's agent's board is shown under: its board's, or
// Name when it has none now.
func (h *Host) Label(id loginservice.Identity) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b, ok := h.boards[id.Key()]; ok {
		return b.label
	}
	return Name(id)
}

// Board implements loginapi.Boards: the board of id's agent, made and
// attached at its first use.
func (h *Host) Board(_ context.Context, id loginservice.Identity) (string, http.Handler, error) {
	k := id.Key()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", nil, errors.New("the bridge is stopping")
	}
	if b, ok := h.boards[k]; ok {
		return b.label, b.h, nil
	}
	if len(h.boards) >= MaxBoards {
		return "", nil, fmt.Errorf("the bridge already hosts %d agents' boards", MaxBoards)
	}
	name := h.freeLabel(k)
	b, err := newBoard(id, h.o.Log.With("agent", name))
	if err != nil {
		return "", nil, err
	}
	if err := h.o.Attach(name, upstream.NewHosted(b.h)); err != nil {
		b.board.Stop()
		return "", nil, err
	}
	b.label = name
	h.boards[k] = b
	h.labels[name] = k
	h.o.Log.Info("agent session's board attached", "agent", name, "agent_id", id.Agent, "server", id.Server)
	if h.o.Live != nil {
		live, stop := h.o.Live(context.Background(), k)
		b.stop = stop
		context.AfterFunc(live, func() { h.release(k, b) })
	}
	return name, b.h, nil
}

// release stops b, k's board, and stops showing it, unless k has another
// board by now.
func (h *Host) release(k loginservice.AgentKey, b *hosted) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.boards[k] != b {
		return
	}
	delete(h.boards, k)
	delete(h.labels, b.label)
	b.board.Stop()
	if h.o.Detach != nil {
		h.o.Detach(b.label)
	}
	h.o.Log.Info("released the board of an agent without a live session", "agent", b.label, "agent_id", k.Agent, "server", k.Server)
}

func newBoard(id loginservice.Identity, log *slog.Logger) (*hosted, error) {
	srv, err := durable.NewServer(wire.Hello{Agent: id.Agent, Software: "collie " + version.String() + " (agent session, server " + id.Server + ")"}, log)
	if err != nil {
		return nil, err
	}
	var o board.Options
	o.Space = wire.Space{ID: "agent", Title: id.Agent}
	o.Tab = wire.Space{ID: "questions", Title: "Questions"}
	o.Main.ID, o.Main.Title = "asks", "Questions from "+id.Agent
	o.Log = log
	bd, err := board.New(srv, o)
	if err != nil {
		return nil, fmt.Errorf("make the board of agent %s: %w", id.Agent, err)
	}
	return &hosted{board: bd, h: srv.Hosted()}, nil
}

// Close stops every board's background work.
func (h *Host) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, b := range h.boards {
		if b.stop != nil {
			b.stop()
		}
		b.board.Stop()
	}
}
