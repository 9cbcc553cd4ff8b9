package durable

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// App carries out what a server receives: the writes, and on a local
// socket the asks and grants. board.Board is the usual one. Each method
// gets a request that has been decoded (closed schema, capped) and
// validated on its own; it refuses with an *Error. The server calls one
// write at a time.
type App interface {
	Answer(r *wire.AnswerRequest, t Transport) (wire.WriteReply, error)
	Send(r *wire.SendRequest) (wire.WriteReply, error)
	Abort(r *wire.AbortRequest) (wire.WriteReply, error)
	Action(r *wire.ActionRequest) (wire.WriteReply, error)
	Rename(r *wire.RenameRequest) (wire.WriteReply, error)
	Close(r *wire.CloseRequest) (wire.WriteReply, error)
	Reopen(r *wire.ReopenRequest) (wire.WriteReply, error)
	Starter(r *wire.StarterRequest) (wire.WriteReply, error)

	// Ask asks a question, or attaches to the one asked before with the
	// same request id or tool-call key, and waits up to wait for its
	// decision.
	Ask(ctx context.Context, r *wire.AskRequest, wait time.Duration) (wire.AskReply, error)
	Grants() wire.GrantsReply
	Revoke(r *wire.RevokeRequest) (wire.RevokeReply, error)
}

// SnapshotSource is an App that builds the snapshot itself.
type SnapshotSource interface {
	Snapshot() *wire.Snapshot
}

// handlers carry out each write of the protocol's registry (wire.Writes)
// with its App method, by the write's name. A write of the registry
// without one fails TestHandlersAreTheRegistry.
var handlers = map[string]writeFunc{
	wire.AnswerWrite:  handler(func(a App, r *wire.AnswerRequest, t Transport) (wire.WriteReply, error) { return a.Answer(r, t) }),
	wire.SendWrite:    handler(func(a App, r *wire.SendRequest, _ Transport) (wire.WriteReply, error) { return a.Send(r) }),
	wire.AbortWrite:   handler(func(a App, r *wire.AbortRequest, _ Transport) (wire.WriteReply, error) { return a.Abort(r) }),
	wire.ActionWrite:  handler(func(a App, r *wire.ActionRequest, _ Transport) (wire.WriteReply, error) { return a.Action(r) }),
	wire.RenameWrite:  handler(func(a App, r *wire.RenameRequest, _ Transport) (wire.WriteReply, error) { return a.Rename(r) }),
	wire.CloseWrite:   handler(func(a App, r *wire.CloseRequest, _ Transport) (wire.WriteReply, error) { return a.Close(r) }),
	wire.ReopenWrite:  handler(func(a App, r *wire.ReopenRequest, _ Transport) (wire.WriteReply, error) { return a.Reopen(r) }),
	wire.StarterWrite: handler(func(a App, r *wire.StarterRequest, _ Transport) (wire.WriteReply, error) { return a.Starter(r) }),
}

// writeFunc carries out a decoded write with an App.
type writeFunc func(App, wire.WriteRequest, Transport) (wire.WriteReply, error)

// handler is f as a handler of the table: a request of another type than
// f takes is an error (wire.ErrUnknownWrite), never another write.
func handler[R wire.WriteRequest](f func(App, R, Transport) (wire.WriteReply, error)) writeFunc {
	return func(a App, req wire.WriteRequest, t Transport) (wire.WriteReply, error) {
		r, ok := req.(R)
		if !ok {
			return wire.WriteReply{}, fmt.Errorf("%w: this agent has no handler for a %T", wire.ErrUnknownWrite, req)
		}
		return f(a, r, t)
	}
}

// dispatch hands req, a decoded request of the write called name, to its
// handler. A name outside the registry, or a request of another type than
// its write's, is an error, never another write.
func (s *Server) dispatch(name string, req wire.WriteRequest, t Transport) (wire.WriteReply, error) {
	h, ok := handlers[name]
	if !ok {
		return wire.WriteReply{}, fmt.Errorf("%w: this agent has no handler for the write %q", wire.ErrUnknownWrite, name)
	}
	return h(s.app, req, t)
}

// writeHandler serves one write route: the caller check first (C2: every
// write takes it, before its body is read), then the capped closed-schema
// decode and the registry row's check, then the request id: a repeat gets the first reply, a reuse for another request
// is refused, and anything new goes to the app. Nothing reaches the app
// unless the whole request is valid, so a refused request changes nothing.
func (s *Server) writeHandler(t Transport, wr wire.Write) http.Handler {
	path := wr.Path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := s.checkCaller(r, t); e != nil {
			writeError(w, e.Status, e.Code, e.Message)
			return
		}
		req := wr.New()
		if err := wr.Decode(r.Body, r.ContentLength, req); err != nil {
			refuseBody(w, err)
			return
		}
		if s.app == nil {
			writeError(w, http.StatusNotImplemented, wire.CodeUnsupported, "this agent takes no writes; it only shows its state")
			return
		}
		canon, _ := json.Marshal(req) // a decoded request always encodes
		sum := sha256.Sum256(append([]byte(path+"\n"), canon...))
		id := req.Head().RequestID

		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		if prev, ok := s.replay.get(id); ok {
			if prev.sum != sum {
				writeError(w, http.StatusConflict, wire.CodeRequestIDReused,
					"the request id "+id+" was used for another request; give every request a new id")
				return
			}
			if prev.err != nil {
				writeError(w, prev.err.Status, prev.err.Code, prev.err.Message)
				return
			}
			rep := prev.reply
			rep.Replayed = true
			writeValue(w, rep)
			return
		}
		rep, err := s.dispatch(wr.Name, req, t)
		if err != nil {
			e := statusOf(err)
			if e.Status != http.StatusInternalServerError {
				s.replay.put(id, replayEntry{sum: sum, err: e})
			}
			s.log.Info(fmt.Sprintf("refused the write %s (request %s): %s", path, id, e.Message), "route", path, "request_id", id, "code", e.Code, "reason", e.Message)
			writeError(w, e.Status, e.Code, e.Message)
			return
		}
		rep.RequestID = id
		s.replay.put(id, replayEntry{sum: sum, reply: rep})
		s.log.Info(fmt.Sprintf("took the write %s (request %s)", path, id), "route", path, "request_id", id, "conversation", rep.Conversation)
		writeValue(w, rep)
	})
}

// decode reads r's body into req (wire.DecodeRequest: capped, closed
// schema, validated) or answers why not (refuseBody).
func decode(w http.ResponseWriter, r *http.Request, req wire.Request) bool {
	if err := wire.DecodeRequest(r.Body, r.ContentLength, req); err != nil {
		refuseBody(w, err)
		return false
	}
	return true
}

// refuseBody answers why a body was refused: 413 body-too-large for a body
// over its cap, 400 bad-request for any other fault. Every route that
// reads a body is refused here, so each refuses a body alike.
func refuseBody(w http.ResponseWriter, err error) {
	if errors.Is(err, wire.ErrBodyTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge, err.Error())
		return
	}
	writeError(w, http.StatusBadRequest, wire.CodeBadRequest, err.Error())
}

func (s *Server) serveAsk(w http.ResponseWriter, r *http.Request) {
	var req wire.AskRequest
	if !decode(w, r, &req) {
		return
	}
	if s.app == nil {
		writeError(w, http.StatusNotImplemented, wire.CodeUnsupported, "this agent takes no questions from local programs")
		return
	}
	wait := time.Duration(req.WaitSeconds) * time.Second
	if wait <= 0 {
		wait = wire.MaxAskWait * time.Second
	}
	// The server's timeouts are shorter than a long wait: without this the
	// connection would be cut, or the request's context cancelled, while
	// the question waits for a human.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	rc.SetWriteDeadline(time.Now().Add(wait + 10*time.Second))
	rep, err := s.app.Ask(r.Context(), &req, wait)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeValue(w, rep)
}

func (s *Server) serveGrants(w http.ResponseWriter, r *http.Request) {
	if s.app == nil {
		writeValue(w, wire.GrantsReply{Grants: []wire.Grant{}})
		return
	}
	writeValue(w, s.app.Grants())
}

func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	var req wire.RevokeRequest
	if !decode(w, r, &req) {
		return
	}
	if s.app == nil {
		writeError(w, http.StatusNotImplemented, wire.CodeUnsupported, "this agent keeps no grants")
		return
	}
	rep, err := s.app.Revoke(&req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeValue(w, rep)
}

// How many request ids the server remembers, and for how long. A device
// retries a write within seconds; a day covers a phone that was offline.
const (
	replayEntries = 4096
	replayAge     = 24 * time.Hour
)

type replayEntry struct {
	sum   [32]byte
	reply wire.WriteReply
	err   *Error
	at    time.Time
}

// replayCache remembers the outcome of recent request ids, oldest out
// first.
type replayCache struct {
	mu    sync.Mutex
	max   int
	age   time.Duration
	m     map[string]replayEntry
	order []string // insertion order; a ring once full
	next  int
}

func newReplayCache(max int, age time.Duration) *replayCache {
	return &replayCache{max: max, age: age, m: make(map[string]replayEntry)}
}

func (c *replayCache) get(id string) (replayEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if ok && time.Since(e.at) > c.age {
		return replayEntry{}, false
	}
	return e, ok
}

func (c *replayCache) put(id string, e replayEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.at = time.Now()
	if _, ok := c.m[id]; ok {
		c.m[id] = e
		return
	}
	if len(c.order) < c.max {
		c.order = append(c.order, id)
	} else {
		delete(c.m, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % c.max
	}
	c.m[id] = e
}
