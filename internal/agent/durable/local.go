package durable

import (
	"net/http"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// LocalApp is an App that also keeps conversations for local programs
// (wire.LocalOpenPath and the routes beside it) and lets an asker withdraw
// its own question. Like asking, these routes take no caller check: none
// of them can answer a question or carry out a write a device makes.
// board.Board is one; a server whose App is not answers 501.
type LocalApp interface {
	// LocalOpen opens a new, empty conversation titled r.Title.
	LocalOpen(r *wire.LocalOpenRequest) (wire.LocalReply, error)
	// LocalNote adds r.Text to an open conversation as the agent's.
	LocalNote(r *wire.LocalNoteRequest) (wire.LocalReply, error)
	// LocalClose closes a conversation LocalOpen opened, withdrawing its
	// open questions; any other conversation is refused.
	LocalClose(r *wire.LocalCloseRequest) (wire.LocalReply, error)
	// Withdraw withdraws the open question asked with r.RequestID and
	// returns its state: withdrawn, or the decision that came first.
	Withdraw(r *wire.WithdrawRequest) (wire.AskReply, error)
}

// localRoutes are the local routes of a LocalApp, by path.
func (s *Server) localRoutes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		wire.LocalOpenPath: localRoute(s, func(a LocalApp, r *wire.LocalOpenRequest) (any, error) { return a.LocalOpen(r) }),
		wire.LocalNotePath: localRoute(s, func(a LocalApp, r *wire.LocalNoteRequest) (any, error) { return a.LocalNote(r) }),
		wire.LocalClosePath: localRoute(s, func(a LocalApp, r *wire.LocalCloseRequest) (any, error) {
			return a.LocalClose(r)
		}),
		wire.WithdrawPath: localRoute(s, func(a LocalApp, r *wire.WithdrawRequest) (any, error) { return a.Withdraw(r) }),
	}
}

// localRoute serves one local route: the capped closed-schema decode and
// validation, then the App.
func localRoute[R any, PR interface {
	*R
	wire.Request
}](s *Server, do func(LocalApp, PR) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req := PR(new(R))
		if !decode(w, r, req) {
			return
		}
		app, ok := s.app.(LocalApp)
		if !ok {
			writeError(w, http.StatusNotImplemented, wire.CodeUnsupported, "this agent keeps no conversations for local programs")
			return
		}
		rep, err := do(app, req)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeValue(w, rep)
	}
}
