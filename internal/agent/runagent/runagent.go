//go:build linux

package runagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/collie-linux/collie/internal/agent/callercheck"
	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// ConversationID is the run's conversation: the board's main one, where
// questions asked without a conversation (collie ask --hook) go.
const ConversationID = "run"

// Options configure a run's agent.
type Options struct {
	Name     string // the agent's name; its socket is Socket
	Socket   string // $XDG_RUNTIME_DIR/desk/NAME.sock
	Title    string // the run's conversation: "claude in ~/src/app"
	Software string // the hello's software: "collie 1.2.0"
	// UserManager asks the user manager for a scope; false goes straight
	// to a child cgroup or the process family.
	UserManager bool
	Getenv      func(string) string
	Log         *slog.Logger
}

// Agent is a run's durable agent, serving until Stop.
type Agent struct {
	Name, Socket string
	Protection   string // Scope, ChildCgroup or Family
	Cgroup       string // the run's cgroup ("" for Family)
	Unit         string // the scope unit (Scope only)
	Why          string // why a stronger protection could not be had

	board   *board.Board
	checker *callercheck.Checker
	l       net.Listener
	cancel  context.CancelFunc
	served  chan error
	undo    func() error
}

// ErrLive is the error of a name whose socket another program listens on.
var ErrLive = errors.New("the name is in use")

// Start listens on the socket (refusing a live one, removing a stale one),
// contains this process (see contain), makes the caller check and serves.
func Start(ctx context.Context, o Options) (*Agent, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	// The socket first: a name that is in use is refused before anything
	// else (a scope, a cgroup) is made for it.
	if live(o.Socket) {
		return nil, fmt.Errorf("%w: another program listens at %s (a run named %s is still going?); choose another --name", ErrLive, o.Socket, o.Name)
	}
	l, err := privsock.Listen(o.Socket)
	if err != nil {
		return nil, err
	}
	c := contain(ctx, o.Name, "collie run "+o.Name+": "+o.Title, o.UserManager, o.Getenv)
	a := &Agent{Name: o.Name, Socket: o.Socket, Protection: c.Protection, Cgroup: c.Cgroup, Unit: c.Unit, Why: c.Why, l: l, undo: c.undo}
	if c.Protection == Family {
		a.checker, err = callercheck.NewFamily()
	} else {
		a.checker, err = callercheck.New()
	}
	if err != nil {
		a.abandon()
		return nil, err
	}
	srv, err := durable.NewServer(wire.Hello{Agent: o.Name, Software: o.Software}, o.Log)
	if err != nil {
		a.abandon()
		return nil, err
	}
	a.board, err = board.New(srv, board.Options{
		Space:       wire.Space{ID: "run", Title: o.Name},
		Tab:         wire.Space{ID: "main", Title: "Main"},
		Main:        struct{ ID, Title string }{ConversationID, o.Title},
		AllowAlways: true, AlwaysFor: time.Hour, // grants in memory: they end with the run
		Log: o.Log,
	})
	if err != nil {
		a.abandon()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	a.cancel, a.served = cancel, make(chan error, 1)
	go func() { a.served <- srv.ServeTransport(sctx, l, durable.Transport{Check: a.checker}) }()
	return a, nil
}

// live reports whether a program listens at path.
func live(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// abandon undoes a start that failed half way.
func (a *Agent) abandon() {
	a.l.Close()
	a.undo()
}

// Note adds text to the run's conversation as the agent's message.
func (a *Agent) Note(text string) {
	a.board.AppendItem(ConversationID, wire.Item{Kind: wire.KindText, Role: "agent", Text: text})
}

// Snapshot is the agent's state, as a bridge reads it.
func (a *Agent) Snapshot() *wire.Snapshot { return a.board.Snapshot() }

// CloseConversation closes the run's conversation; its open questions
// are withdrawn (their askers get "withdrawn").
func (a *Agent) CloseConversation() {
	a.board.Close(&wire.CloseRequest{Header: wire.Header{RequestID: "run-exit"}, Conversation: ConversationID})
}

// Stop stops serving, removes the socket and leaves the run's cgroup.
// It returns what could not be undone (a child cgroup a tool still runs
// in), for the log.
func (a *Agent) Stop() error {
	a.cancel()
	err := <-a.served
	a.board.Stop()
	a.l.Close() // removes the socket
	return errors.Join(err, a.undo())
}

// CheckerCgroup is the cgroup the caller check refuses callers in ("" for
// the process family alone).
func (a *Agent) CheckerCgroup() string { return a.checker.Cgroup() }

// Describe says in a sentence how the run's tools are kept from answering.
func (a *Agent) Describe() string {
	switch a.Protection {
	case Scope:
		return "the coding agent and every tool it runs are in the scope " + a.Unit + "; the agent refuses their answers"
	case ChildCgroup:
		return "the coding agent and every tool it runs are in the cgroup " + a.Cgroup + "; the agent refuses their answers"
	}
	return "the agent refuses answers from the coding agent and every tool it starts (its process family); a tool started by the user manager (systemd-run --user) is not told apart"
}
