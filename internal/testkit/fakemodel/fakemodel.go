// Package fakemodel is a scripted model API for tests of real coding-agent
// clients (Claude Code, Codex CLI, Gemini CLI, OpenCode), offline. It
// serves on loopback and speaks three dialects on one server:
//
//   - Anthropic Messages (POST /v1/messages, SSE when "stream" is true),
//     for Claude Code (ANTHROPIC_BASE_URL) and OpenCode;
//   - OpenAI Responses (POST /v1/responses and /responses, SSE), for Codex
//     (a [model_providers.fake] with wire_api = "responses");
//   - Gemini (POST /v1beta/models/M:streamGenerateContent?alt=sse and
//     :generateContent), for Gemini CLI (GOOGLE_GEMINI_BASE_URL).
//
// A Script is a list of turns. Each request that offers the model tools
// (the client's agent loop) takes the next turn: a tool call (a [Call])
// or a text reply. Requests without tools (titles, summaries, quota
// probes the clients send on the side) get a short text reply and take
// no turn (a Gemini request that asks for JSON of a schema gets JSON of
// its shape); once the script is used up, every reply is [Server.Done]'s
// text. Every request is recorded with its body, so that a test can read
// what the client sent back (the tool result, a hook's deny reason).
//
// Test-only: it trusts its input and keeps everything in memory.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Dialect is the API a request was made in.
type Dialect string

// The dialects the server speaks, and Other for any request it does not
// know (recorded and answered 404).
const (
	Anthropic Dialect = "anthropic"
	OpenAI    Dialect = "openai-responses"
	Gemini    Dialect = "gemini"
	Other     Dialect = "other"
)

// Turn is one scripted model turn: a tool call when Call is set, else the
// text Text.
type Turn struct {
	Call *Call
	Text string
}

// Call is a tool call the model makes. ID is the call's id in the
// dialect's form ("toolu_…", "call_…"); when empty the server makes one
// from the turn's number.
type Call struct {
	Name  string
	Input map[string]any
	ID    string
}

// ToolCall is the turn "call the tool name with input".
func ToolCall(name string, input map[string]any) Turn {
	return Turn{Call: &Call{Name: name, Input: input}}
}

// Say is the turn "reply with text".
func Say(text string) Turn { return Turn{Text: text} }

// Request is one request the server received.
type Request struct {
	Seq     int // 0, 1, … in the order received
	Dialect Dialect
	Method  string
	Path    string // with the query
	Header  http.Header
	Body    []byte
	// Turn is the index of the script turn this request took, or -1 for
	// a side request (no tools offered), one after the end of the script,
	// or a request of no dialect.
	Turn int
	// Model is the model the request names, where its dialect has one.
	Model string
}

// Server is a running fake model API.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	srv    *httptest.Server
	script []Turn
	done   string

	mu       sync.Mutex
	next     int // the next script turn
	requests []Request
	changed  chan struct{} // closed and replaced on every new request
}

// Option changes a Server before it starts.
type Option func(*Server)

// WithDone sets the text of every reply once the script is used up (and
// of side requests); the default is "done".
func WithDone(text string) Option { return func(s *Server) { s.done = text } }

// Start starts a server on loopback that plays script. Close stops it.
func Start(script []Turn, opts ...Option) *Server {
	s := &Server{script: script, done: "done", changed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server and waits for its requests to end.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// TurnRequests returns the requests that took a script turn or came after
// the script's end with tools offered: the client's agent loop.
func (s *Server) TurnRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Dialect != Other && offersTools(r.Dialect, r.Body) {
			out = append(out, r)
		}
	}
	return out
}

// TurnsTaken returns how many script turns have been played.
func (s *Server) TurnsTaken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Wait returns the first recorded request for which match is true,
// waiting for one to arrive until ctx ends.
func (s *Server) Wait(ctx context.Context, match func(Request) bool) (Request, error) {
	seen := 0
	for {
		s.mu.Lock()
		reqs, changed := s.requests[seen:], s.changed
		seen = len(s.requests)
		s.mu.Unlock()
		for _, r := range reqs {
			if match(r) {
				return r, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Request{}, fmt.Errorf("fakemodel: waiting for a request: %w", ctx.Err())
		}
	}
}

// record stores r, gives it its sequence number and, for a request of
// the agent loop, its script turn.
func (s *Server) record(r Request, loop bool) (Request, Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Seq = len(s.requests)
	r.Turn = -1
	var turn Turn
	scripted := false
	if loop && s.next < len(s.script) {
		r.Turn = s.next
		turn = s.script[s.next]
		s.next++
		scripted = true
	}
	s.requests = append(s.requests, r)
	close(s.changed)
	s.changed = make(chan struct{})
	return r, turn, scripted
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r := Request{Method: req.Method, Path: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body}
	path := req.URL.Path
	switch {
	case req.Method == http.MethodConnect:
		// The server is also the clients' HTTPS proxy in tests, so that
		// any request to the outside shows here (and fails).
		r.Dialect, r.Path = Other, req.Host
		s.record(r, false)
		http.Error(w, "fakemodel: no network beyond the fake model API", http.StatusForbidden)
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		r.Dialect = Anthropic
		s.record(r, false)
		writeJSON(w, map[string]any{"input_tokens": len(body)/4 + 1})
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		r.Dialect = Anthropic
		s.generate(w, r, body)
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		r.Dialect = OpenAI
		s.generate(w, r, body)
	case req.Method == http.MethodPost && strings.Contains(path, "/models/") &&
		(strings.HasSuffix(path, ":streamGenerateContent") || strings.HasSuffix(path, ":generateContent")):
		r.Dialect = Gemini
		r.Model = geminiModel(path)
		s.generate(w, r, body)
	case req.Method == http.MethodPost && strings.Contains(path, "/models/") && strings.HasSuffix(path, ":countTokens"):
		r.Dialect = Gemini
		s.record(r, false)
		writeJSON(w, map[string]any{"totalTokens": len(body)/4 + 1})
	case req.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		r.Dialect = Other
		s.record(r, false)
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}, "has_more": false})
	default:
		r.Dialect = Other
		s.record(r, false)
		http.NotFound(w, req)
	}
}

// generate answers a generation request in its dialect.
func (s *Server) generate(w http.ResponseWriter, r Request, body []byte) {
	var head struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &head)
	if r.Model == "" {
		r.Model = head.Model
	}
	r, turn, scripted := s.record(r, offersTools(r.Dialect, body))
	if !scripted {
		turn = Say(s.done)
		if r.Dialect == Gemini {
			if text, ok := geminiSchemaReply(body); ok {
				turn = Say(text)
			}
		}
	}
	if turn.Call != nil && turn.Call.ID == "" {
		c := *turn.Call
		c.ID = fmt.Sprintf("%s%d", idPrefix(r.Dialect), r.Seq)
		turn.Call = &c
	}
	switch r.Dialect {
	case Anthropic:
		if head.Stream {
			anthropicStream(w, r, turn)
		} else {
			writeJSON(w, anthropicMessage(r, turn))
		}
	case OpenAI:
		if head.Stream || !strings.Contains(string(body), `"stream"`) {
			openaiStream(w, r, turn)
		} else {
			writeJSON(w, openaiResponse(r, turn))
		}
	case Gemini:
		if strings.HasSuffix(strings.SplitN(r.Path, "?", 2)[0], ":streamGenerateContent") {
			geminiStream(w, turn)
		} else {
			writeJSON(w, geminiResponse(turn))
		}
	}
}

func idPrefix(d Dialect) string {
	switch d {
	case Anthropic:
		return "toolu_fake"
	case OpenAI:
		return "call_fake"
	}
	return "fake"
}

// offersTools reports whether a generation request offers the model
// tools: the mark of a client's agent loop, as against its side requests.
func offersTools(d Dialect, body []byte) bool {
	var b struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	if d != Gemini {
		return len(b.Tools) > 0
	}
	var g struct {
		Tools []struct {
			FunctionDeclarations []json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &g)
	for _, t := range g.Tools {
		if len(t.FunctionDeclarations) > 0 {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// sse writes Server-Sent Events, flushing after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// event writes one event; name may be empty (Gemini's stream has none).
func (e *sse) event(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the server's own values always marshal
	}
	if name != "" {
		fmt.Fprintf(e.w, "event: %s\n", name)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if e.f != nil {
		e.f.Flush()
	}
}

func inputJSON(c *Call) string {
	in := c.Input
	if in == nil {
		in = map[string]any{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type responseWriter = http.ResponseWriter
