// Package durable is the agent side of the durable-agent protocol: it
// listens where T5 says (socket activation or its own private socket) and
// serves the agent's hello and snapshot with strong ETags, so a poll that
// finds nothing new costs a 304 and no body.
package durable

import (
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
	"time"

	"github.com/collie-linux/collie/internal/wire"
)

// Server serves one agent's state over the protocol.
type Server struct {
	log *slog.Logger

	mu    sync.RWMutex
	hello []byte
	snap  []byte
	etag  string
}

// NewServer returns a server that answers hello with h and serves an empty
// snapshot until SetSnapshot is called.
func NewServer(h wire.Hello, log *slog.Logger) (*Server, error) {
	h.Protocol = wire.Version
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("encode hello: %w", err)
	}
	if len(hb) > wire.HelloCap {
		return nil, fmt.Errorf("the hello reply is %d bytes; the cap is %d", len(hb), wire.HelloCap)
	}
	s := &Server{log: log, hello: hb}
	if err := s.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{}}); err != nil {
		return nil, err
	}
	return s, nil
}

// SetSnapshot replaces the state the agent shows. A snapshot over the cap is
// refused and the previous one stays.
func (s *Server) SetSnapshot(snap *wire.Snapshot) error {
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode snapshot: %w", err)
	}
	if len(b) > wire.SnapshotCap {
		return fmt.Errorf("the snapshot is %d bytes; the cap is %d", len(b), wire.SnapshotCap)
	}
	sum := sha256.Sum256(b)
	etag := `"` + base64.RawURLEncoding.EncodeToString(sum[:18]) + `"`
	s.mu.Lock()
	s.snap, s.etag = b, etag
	s.mu.Unlock()
	return nil
}

// Handler returns the protocol's HTTP routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+wire.HelloPath, s.serveHello)
	mux.HandleFunc("GET "+wire.SnapshotPath, s.serveSnapshot)
	return versioned(mux)
}

// Serve serves the protocol on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return fmt.Errorf("serve: %w", err)
}

func (s *Server) serveHello(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	b := s.hello
	s.mu.RUnlock()
	writeJSON(w, b)
}

func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	b, etag := s.snap, s.etag
	s.mu.RUnlock()
	w.Header().Set("ETag", etag)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeJSON(w, b)
}

func writeJSON(w http.ResponseWriter, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.Write(b)
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
			wire.WriteError(w, http.StatusBadRequest, wire.CodeProtocol,
				fmt.Sprintf("this agent speaks protocol %s, not %s", want, v))
			return
		}
		next.ServeHTTP(w, r)
	})
}
