// Package mcpserver is `collie mcp`: a Model Context Protocol server (over
// stdio, on the official Go SDK) through which any MCP client, a coding
// agent or an agent framework, asks its human a question and waits for a
// tap on a paired device (D1, D6). It is a local program of a durable
// agent, like collie ask: it asks over the agent's Unix socket with the
// local routes of collie-durable(7) (ask, withdraw, and one conversation
// per MCP session: open, note, close), which wait for a human and can
// answer nothing, so it takes no caller check (C2) and can never answer
// its own questions.
//
// Its tools: ask_yes_no, ask_choice, ask_text and ask_form block until the
// human answers (or the question times out, denied by default, or is
// withdrawn) and return {"answer": ...}; notify adds a message to the
// session's conversation; approve is Claude Code's --permission-prompt-tool.
// While a question waits the client gets progress notifications when it
// asked for them, and a call the client cancels withdraws its question at
// once.
//
// It may import the MCP SDK, internal/agent/ask (the socket's client and the
// card of a tool call, shared with the hook), internal/protocol/wire, internal/protocol/sanitize
// and internal/protocol/jsonstrict; never the bridge, the device API or the durable
// runtime itself: it talks to an agent only over the agent's socket.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Timeouts of a question: the default when a call gives none (and for
// approve, which takes none), and the most a call may ask for.
const (
	DefaultTimeout = 5 * time.Minute
	MaxTimeout     = time.Hour
)

// ProgressEvery is how often a waiting call reports progress to a client
// that gave a progress token.
const ProgressEvery = 5 * time.Second

// Config configures a Server.
type Config struct {
	// Agent is the HTTP client of the durable agent's socket
	// (ask.SocketClient); Where names the socket in messages.
	Agent *http.Client
	Where string
	// Cwd and Home name the working folder in the conversation's title
	// (Home shown as ~).
	Cwd, Home string
	// Timeout is the default timeout of a question (DefaultTimeout when 0,
	// at most MaxTimeout).
	Timeout time.Duration
	// ProgressEvery overrides ProgressEvery (tests).
	ProgressEvery time.Duration
	Version       string
	Log           *slog.Logger
}

// Server is collie mcp's MCP server. One Server may serve several
// sessions (each with a conversation of its own); over stdio it serves one.
type Server struct {
	cfg   Config
	agent *agent
	mcp   *mcp.Server

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
}

// session is what one MCP session keeps: its conversation on the agent,
// opened at the first call that needs it.
type session struct {
	mu    sync.Mutex
	conv  string // the conversation's id, once opened
	main  bool   // the agent keeps none for local programs: ask in its own
	ended bool
}

// New returns a server with collie mcp's tools.
func New(cfg Config) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	cfg.Timeout = min(cfg.Timeout, MaxTimeout)
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = ProgressEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, agent: &agent{hc: cfg.Agent, where: cfg.Where}, sessions: map[*mcp.ServerSession]*session{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "collie", Title: "Collie: ask your human", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       cfg.Log,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	s.mcp.AddReceivingMiddleware(capArguments)
	s.addTools()
	return s
}

const instructions = "Collie puts a question on the user's phone or browser and waits for their tap. " +
	"Use ask_yes_no, ask_choice, ask_text or ask_form when you need a human decision or a value only the user has; " +
	"each call blocks until the user answers, and a timeout, a withdrawal or no answer is an error: treat it as no. " +
	"Use notify to tell the user something that needs no answer."

// Serve serves one MCP session on t until the client goes away or ctx
// ends, then closes the session's conversation on the agent.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("start the MCP session: %w", err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		ss.Close()
		err = <-ended
	}
	s.end(ctx, ss)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// sessionOf returns ss's state.
func (s *Server) sessionOf(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.sessions[ss]
	if !ok {
		st = &session{}
		s.sessions[ss] = st
	}
	return st
}

// end closes ss's conversation, if it opened one. The session's state
// stays, marked ended, so that a call still running cannot open another
// (over stdio a server serves one session; a few bytes stay per session).
func (s *Server) end(ctx context.Context, ss *mcp.ServerSession) {
	st := s.sessionOf(ss)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ended = true
	if st.conv == "" {
		return
	}
	if err := s.agent.close(ctx, st.conv); err != nil {
		s.cfg.Log.Warn("could not close the session's conversation", "conversation", st.conv, "err", err)
	}
}

// conversation returns the session's conversation on the agent, opening
// it at the first call: "" means the agent's own (an agent that keeps no
// conversations for local programs).
func (s *Server) conversation(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
	st := s.sessionOf(req.Session)
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.ended:
		return "", errors.New("the MCP session has ended")
	case st.conv != "" || st.main:
		return st.conv, nil
	}
	id, err := s.agent.open(ctx, s.title(req))
	var rf *refusal
	if errors.As(err, &rf) && (rf.code == wire.CodeUnsupported || rf.code == wire.CodeNotFound) {
		st.main = true
		return "", nil
	}
	if err != nil {
		return "", err
	}
	st.conv = id
	return id, nil
}

// forget drops the session's conversation conv, which the agent no longer
// knows: the next call opens another.
func (s *Server) forget(req *mcp.CallToolRequest, conv string) {
	st := s.sessionOf(req.Session)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.conv == conv {
		st.conv = ""
	}
}

// title names the session's conversation after the client and the folder
// it runs in: "claude-code in ~/src/app".
func (s *Server) title(req *mcp.CallToolRequest) string {
	name := ""
	if ci := req.ClientInfo(); ci != nil {
		name = ci.Name
	}
	name, _ = sanitize.Line(name, 64)
	if strings.TrimSpace(name) == "" {
		name = "An MCP client"
	}
	dir := s.cfg.Cwd
	if h := s.cfg.Home; h != "" && h != "/" {
		if rel, err := filepath.Rel(h, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			dir = filepath.Join("~", rel)
		}
	}
	title := name
	if dir != "" {
		title += " in " + dir
	}
	title, _ = sanitize.Line(title, sanitize.TitleBytes)
	return title
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
