// Package agenthost hosts, in the bridge's process, one board per agent of
// an agent platform that logged in (issue 14): a durable agent
// (durable.Server with a board.Board, "always allow" off) holding one
// conversation, the agent's questions. The bridge reads it through
// upstream.NewHosted, so it is shown, cleaned (X1) and pushed (D9) like
// any durable agent, and a paired device answers it through
// Bridge.Forward (D6); the agent API calls only its /v1/ask. Boards live
// in memory: after a restart an agent's waiting ask is asked again by its
// collie ask, as from any agent that restarted.
package agenthost

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

	"github.com/collie-linux/collie/internal/agentauth"
	"github.com/collie-linux/collie/internal/durable"
	"github.com/collie-linux/collie/internal/durable/board"
	"github.com/collie-linux/collie/internal/upstream"
	"github.com/collie-linux/collie/internal/version"
	"github.com/collie-linux/collie/internal/wire"
)

// Prefix starts the name of every hosted agent; sources.json cannot use
// it (sources.CheckName refuses nothing here, so the bridge refuses a
// clash when it attaches).
const Prefix = "raft."

// MaxBoards bounds the boards one bridge hosts.
const MaxBoards = 256

// Attach shows a hosted agent on devices: the bridge reads it through
// client under name.
type Attach func(name string, client upstream.Waiter) error

// Host holds the boards.
type Host struct {
	log    *slog.Logger
	attach Attach

	mu     sync.Mutex
	boards map[string]*hosted
	closed bool
}

type hosted struct {
	board *board.Board
	h     http.Handler // the agent's routes (durable.Server.Hosted)
}

// New returns a host that attaches each new board with attach.
func New(log *slog.Logger, attach Attach) *Host {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Host{log: log, attach: attach, boards: map[string]*hosted{}}
}

// Name is the name the bridge shows an agent's board under: Prefix, the
// agent's id in lower case (at most 40 bytes of it), and six hex digits of
// a digest of its server and id, so that two servers' agents of one id,
// or ids differing only in case, stay apart. It is a valid durable agent
// name (sources.CheckName).
func Name(id agentauth.Identity) string {
	var b strings.Builder
	for _, c := range strings.ToLower(id.Agent) {
		if b.Len() == 40 {
			break
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(id.Server + "\x00" + id.Agent))
	return Prefix + b.String() + "." + hex.EncodeToString(sum[:3])
}

// Board implements agentapi.Boards: the board of id's agent, made and
// attached at its first use.
func (h *Host) Board(_ context.Context, id agentauth.Identity) (string, http.Handler, error) {
	name := Name(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return "", nil, errors.New("the bridge is stopping")
	}
	if b, ok := h.boards[name]; ok {
		return name, b.h, nil
	}
	if len(h.boards) >= MaxBoards {
		return "", nil, fmt.Errorf("the bridge already hosts %d agents' boards", MaxBoards)
	}
	b, err := newBoard(id, h.log.With("agent", name))
	if err != nil {
		return "", nil, err
	}
	if err := h.attach(name, upstream.NewHosted(b.h)); err != nil {
		b.board.Stop()
		return "", nil, err
	}
	h.boards[name] = b
	h.log.Info("agent session's board attached", "agent", name, "agent_id", id.Agent, "server", id.Server)
	return name, b.h, nil
}

func newBoard(id agentauth.Identity, log *slog.Logger) (*hosted, error) {
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
		b.board.Stop()
	}
}
