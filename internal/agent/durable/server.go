// Package durable is the agent side of the durable-agent protocol: it
// listens where T5 says (socket activation or its own private socket),
// serves the agent's hello and snapshot with strong ETags, so a poll that
// finds nothing new costs a 304 and no body, holds a waiting read until
// the snapshot changes (wire.WaitHeader, wait.go), and carries out the writes
// (answer, send, abort, action, rename, close, reopen, starter) once per
// request id, after the caller check of C2 on a local socket.
//
// The server is transport-agnostic: each listener is served with a
// Transport that says how its callers are gated. A local Unix socket gets
// the caller check; the token transport (HTTPS, K3) gets none, never offers
// "always allow", and does not serve the local routes (ask, grants, and a
// local program's own conversation and withdraw, local.go).
//
// What the writes and asks do is up to the App a server is given; the
// reference agent's is board.Board (package durable/board), whose "always
// allow" grants are kept by package durable/grants. Tests serve a server
// with package durable/durabletest.
package durable

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/agent/callercheck"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Server serves one agent's state over the protocol.
type Server struct {
	log *slog.Logger

	mu    sync.RWMutex
	hello []byte
	// snaps is the snapshot in its four forms (encodings): what a local
	// listener shows, without "always allow" offers for the token
	// transport (K3), and each without the questions' details for a
	// bridge that does not take them.
	snaps encodings
	// hist is the last snapshots shown, oldest first, that a delta may
	// start from (delta.go).
	hist []version

	// source, when set, builds the snapshot; dirty says it changed since
	// it was last encoded. Encoding waits for the next read.
	source  func() *wire.Snapshot
	dirty   atomic.Bool
	buildMu sync.Mutex

	// change is closed at the next change of the snapshot (SetSnapshot)
	// or of its source (Changed), and replaced: what a waiting read waits
	// on (wait.go).
	changeMu sync.Mutex
	change   chan struct{}

	app     App
	writeMu sync.Mutex // one write at a time: replay lookup, app, record
	replay  *replayCache

	checkOnce sync.Once
	checker   CallerChecker
	checkErr  error

	// The http.Server's read and write timeouts; an ask extends both.
	readTimeout, writeTimeout time.Duration
}

type encoded struct {
	body []byte
	etag string
}

// NewServer returns a server that answers hello with h and serves an empty
// snapshot until SetSnapshot is called or an App with a snapshot source is
// attached.
func NewServer(h wire.Hello, log *slog.Logger) (*Server, error) {
	h.Protocol = wire.Version
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode hello: %w", err)
	}
	if len(hb) > wire.HelloCap {
		return nil, fmt.Errorf("the hello reply is %d bytes; the cap is %d", len(hb), wire.HelloCap)
	}
	s := &Server{log: log, hello: hb, replay: newReplayCache(replayEntries, replayAge),
		readTimeout: 30 * time.Second, writeTimeout: 30 * time.Second, change: make(chan struct{})}
	if err := s.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{}}); err != nil {
		return nil, err
	}
	return s, nil
}

// SetSnapshot replaces the state the agent shows. A snapshot over the cap is
// refused and the previous one stays.
func (s *Server) SetSnapshot(snap *wire.Snapshot) error {
	e, err := encodeSnapshot(snap)
	if err != nil {
		return err
	}
	// The copy a delta may start from is made outside the lock: reads go
	// on meanwhile.
	s.mu.RLock()
	news := s.snaps[0].etag != e[0].etag || s.snaps[1].etag != e[1].etag || s.snaps[2].etag != e[2].etag || s.snaps[3].etag != e[3].etag
	s.mu.RUnlock()
	var kept *wire.Snapshot
	if news {
		kept = copySnapshot(snap)
	}
	s.mu.Lock()
	changed := false
	for i := range e {
		changed = changed || s.snaps[i].etag != e[i].etag
	}
	s.snaps = e
	if changed && kept != nil {
		s.remember(kept, e)
	}
	s.mu.Unlock()
	if changed {
		s.notify()
	}
	return nil
}

// encodeSnapshot encodes snap as it is, and with every "always allow"
// offer taken out, for the token transport (K3). Each comes in two forms:
// with the questions' details, and without them for a bridge that did not
// announce the extension (wire.ExtDetail), which would refuse the whole
// snapshot for an unknown field.
func encodeSnapshot(snap *wire.Snapshot) (e encodings, err error) {
	aa, details := has(snap, func(q *wire.Question) bool { return q.AllowAlways || q.AlwaysScope != nil }),
		has(snap, func(q *wire.Question) bool { return q.Detail != "" })
	for i := range e {
		noAA, noDetail := i&1 != 0, i&2 != 0
		switch {
		case noAA && !aa:
			e[i] = e[i&^1]
		case noDetail && !details:
			e[i] = e[i&^2]
		default:
			if e[i], err = encodeOne(without(snap, noAA, noDetail)); err != nil {
				return e, err
			}
		}
	}
	return e, nil
}

// encodings are a snapshot's four forms, by index: bit 1 set without the
// "always allow" offers, bit 2 set without the details.
type encodings [4]encoded

// without is snap with the always-allow offers and the details taken out,
// as asked; snap itself when nothing is.
func without(snap *wire.Snapshot, noAA, noDetail bool) *wire.Snapshot {
	if !noAA && !noDetail {
		return snap
	}
	c := *snap
	c.Spaces = make([]wire.Space, len(snap.Spaces))
	for i, sp := range snap.Spaces {
		sp.Tabs = append([]wire.Tab(nil), sp.Tabs...)
		for j := range sp.Tabs {
			tb := &sp.Tabs[j]
			tb.Conversations = append([]wire.Conversation(nil), tb.Conversations...)
			for k := range tb.Conversations {
				cv := &tb.Conversations[k]
				cv.Questions = append([]wire.Question(nil), cv.Questions...)
				for l := range cv.Questions {
					q := &cv.Questions[l]
					if noAA {
						q.AllowAlways, q.AlwaysScope = false, nil
					}
					if noDetail {
						q.Detail = ""
					}
				}
			}
		}
		c.Spaces[i] = sp
	}
	return &c
}

func has(snap *wire.Snapshot, f func(*wire.Question) bool) bool {
	for _, sp := range snap.Spaces {
		for _, tb := range sp.Tabs {
			for _, cv := range tb.Conversations {
				for i := range cv.Questions {
					if f(&cv.Questions[i]) {
						return true
					}
				}
			}
		}
	}
	return false
}

func encodeOne(snap *wire.Snapshot) (encoded, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // '<' stays one byte: the cap counts bytes
	if err := enc.Encode(snap); err != nil {
		return encoded{}, fmt.Errorf("encode snapshot: %w", err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > wire.SnapshotCap {
		return encoded{}, fmt.Errorf("the snapshot is %d bytes; the cap is %d", len(b), wire.SnapshotCap)
	}
	sum := sha256.Sum256(b)
	return encoded{body: b, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`}, nil
}

// SetApp attaches what carries out writes and asks. Without one, every
// write is answered 501 unsupported. When app also implements
// SnapshotSource, the snapshot is built from it whenever it reports a
// change.
func (s *Server) SetApp(app App) {
	s.app = app
	if src, ok := app.(SnapshotSource); ok {
		s.mu.Lock()
		s.source = src.Snapshot
		s.mu.Unlock()
		s.Changed()
	}
}

// Changed tells the server that the snapshot source has something new.
// The snapshot is encoded again at the next read, or at once when a
// waiting read waits for it.
func (s *Server) Changed() {
	s.dirty.Store(true)
	s.notify()
}

// current returns the encoded snapshot for t, building it first when the
// source changed, with the questions' details when the read announced it
// takes them.
func (s *Server) current(t Transport, details bool) encoded {
	if s.dirty.Load() {
		s.buildMu.Lock()
		if s.dirty.Swap(false) {
			s.mu.RLock()
			src := s.source
			s.mu.RUnlock()
			if src != nil {
				if err := s.SetSnapshot(src()); err != nil {
					s.log.Error("the agent's state is over the snapshot cap; the device keeps the previous one", "err", err)
				}
			}
		}
		s.buildMu.Unlock()
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.snaps[encodingIndex(t, details)]
}

// CallerChecker is the caller check: callercheck.Checker, or a stand-in
// in tests.
type CallerChecker interface {
	Check(c syscall.Conn) (callercheck.Caller, error)
}

// Transport says how the callers of one listener are gated.
type Transport struct {
	// Remote marks the token transport (HTTPS): the token is the only
	// gate, so there is no caller check (K3); "always allow" is neither
	// offered nor accepted; the local routes (ask, grants) are not served.
	Remote bool
	// Unchecked turns the caller check off on a local listener: the
	// agent's explicit CallerCheck = "off" (C3). Any process of the user
	// can then write.
	Unchecked bool
	// Check replaces the real caller check (tests). nil means
	// callercheck.New(), made once per server.
	Check CallerChecker
	// Tokens gate a Remote transport: every request needs one of them
	// (K3, K6). A Remote transport without a token refuses everything.
	Tokens Tokens
}

func (t Transport) checked() bool { return !t.Remote && !t.Unchecked }

// Handler returns the protocol's routes as served on a local Unix socket
// with the caller check on. The check needs the connection, which Serve
// and ServeTransport put in each request's context; served any other way,
// every write is refused.
func (s *Server) Handler() http.Handler { return s.handler(Transport{}) }

// Hosted returns the protocol's routes for an agent the bridge hosts in
// its own process (an agent platform's agent session), called
// by the bridge's own code and never served on a socket or a port: there
// is no connection, so no caller check. Its only callers are the
// bridge's reads and Bridge.Forward (a paired device's writes, D6), and
// the agent API's ask for that one agent. "Always allow" is not offered
// (hosted boards turn it off).
func (s *Server) Hosted() http.Handler { return s.handler(Transport{Unchecked: true}) }

func (s *Server) handler(t Transport) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.HelloPath, s.serveHello)
	mux.HandleFunc("GET "+wire.SnapshotPath, func(w http.ResponseWriter, r *http.Request) { s.serveSnapshot(w, r, t) })
	for _, w := range wire.Writes() {
		mux.Handle("POST "+w.Path, s.writeHandler(t, w))
	}
	if !t.Remote {
		mux.HandleFunc("POST "+wire.AskPath, s.serveAsk)
		mux.HandleFunc("GET "+wire.GrantsPath, s.serveGrants)
		mux.HandleFunc("POST "+wire.RevokePath, s.serveRevoke)
		for path, h := range s.localRoutes() {
			mux.HandleFunc("POST "+path, h)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, wire.CodeNotFound,
			fmt.Sprintf("this agent has no route %s %s; see collie-durable(7) for the routes of protocol %d", r.Method, clipPath(r.URL.Path), wire.Version))
	})
	if t.Remote {
		return RequireToken(t.Tokens, versioned(mux))
	}
	return versioned(mux)
}

func clipPath(p string) string {
	if len(p) > 64 {
		p = p[:64] + "…"
	}
	return strconv.QuoteToASCII(p)
}

type connKey struct{}

// Serve serves the protocol on l, a local Unix socket with the caller
// check on, until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	return s.ServeTransport(ctx, l, Transport{})
}

// ServeTransport serves the protocol on l, gated as t says, until ctx ends.
// One server may serve several listeners at once.
func (s *Server) ServeTransport(ctx context.Context, l net.Listener, t Transport) error {
	if t.checked() && t.Check == nil {
		if _, err := s.defaultChecker(); err != nil {
			s.log.Warn("the caller check cannot work here; every write on this socket will be refused", "err", err)
		}
	}
	srv := &http.Server{
		Handler:           s.handler(t),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       s.readTimeout,
		WriteTimeout:      s.writeTimeout, // an ask extends its own
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		// Requests end with the server: a long ask ends at once when the
		// agent stops, rather than holding Shutdown for its grace time.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if t.checked() {
		// Each connection records when it was accepted, which the caller
		// check needs where the kernel gives no pidfd for the caller (C3).
		l = callercheck.Listener(l)
	}
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

func (s *Server) defaultChecker() (CallerChecker, error) {
	s.checkOnce.Do(func() {
		c, err := callercheck.New()
		if err != nil {
			s.checkErr = err
			return
		}
		s.checker = c
	})
	return s.checker, s.checkErr
}

// checkCaller runs the caller check of t on the request's connection and
// returns the refusal, if any.
func (s *Server) checkCaller(r *http.Request, t Transport) *Error {
	if !t.checked() {
		return nil
	}
	chk := t.Check
	if chk == nil {
		var err error
		if chk, err = s.defaultChecker(); err != nil {
			return Refuse(http.StatusForbidden, wire.CodeCallerRefused, "%v", err)
		}
	}
	conn, _ := r.Context().Value(connKey{}).(net.Conn)
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return Refuse(http.StatusForbidden, wire.CodeCallerRefused,
			"the agent cannot tell who is calling on this connection, so it refuses the write; write through the agent's Unix socket from a paired device")
	}
	who, err := chk.Check(sc)
	if err != nil {
		s.log.Warn("write refused: caller check", "route", r.URL.Path, "caller_pid", who.PID, "caller_cgroup", who.Cgroup, "reason", err.Error())
		return Refuse(http.StatusForbidden, wire.CodeCallerRefused, "%s", err.Error())
	}
	return nil
}

func (s *Server) serveHello(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	b := s.hello
	s.mu.RUnlock()
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request, t Transport) {
	if secs, ok := wire.ParseWait(r.Header.Get(wire.WaitHeader)); ok {
		s.serveWaiting(w, r, t, secs)
		return
	}
	e := s.current(t, takesDetail(r))
	w.Header().Set("ETag", e.etag)
	if etagMatch(r.Header.Get("If-None-Match"), e.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.writeSnapshot(w, r, t, e)
}

// writeError writes an error reply with status, code and a sentence for
// the user.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, wire.ErrorJSON(code, message))
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

func writeValue(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeErr(w, fmt.Errorf("encode the reply: %w", err))
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func writeErr(w http.ResponseWriter, err error) {
	e := statusOf(err)
	writeError(w, e.Status, e.Code, e.Message)
}

// etagMatch implements If-None-Match for strong tags: a list of tags, or *.
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// versioned stamps every reply with the protocol version and refuses a
// request that asks for another one.
func versioned(next http.Handler) http.Handler {
	want := strconv.Itoa(wire.Version)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(wire.VersionHeader, want)
		if v := r.Header.Get(wire.VersionHeader); v != "" && v != want {
			writeError(w, http.StatusBadRequest, wire.CodeProtocol,
				fmt.Sprintf("this agent speaks protocol %s, not %s", want, v))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// takesDetail reports whether the read announced the detail extension.
func takesDetail(r *http.Request) bool {
	return wire.HasExtension(r.Header.Get(wire.ExtensionsHeader), wire.ExtDetail)
}
