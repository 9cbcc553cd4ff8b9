package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/linux/peercred"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Env is what the hook, and collie ask, work with.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Remote, when set, carries the question to the bridge's agent API
	// instead of an agent's socket: collie ask in an agent environment.
	// It sends a request's path ("/v1/ask") to the bridge with the
	// agent's bearer token; the loop is the same.
	Remote Transport
	// Refused, when set, is why no question can be asked here at all (an
	// incomplete agent environment): collie ask returns it as Unasked
	// (exit 5) after checking the command line, and the hook denies with
	// it.
	Refused error
}

// ClientFor is the client of the agent at path, or the bridge's over Remote.
func (e Env) ClientFor(path string) *Client {
	if e.Remote != nil {
		return &Client{t: e.Remote}
	}
	return &Client{t: socketTransport(path)}
}

// who is what answers the question, for messages.
func (e Env) who() string {
	if e.Remote != nil {
		return "the bridge"
	}
	return "the agent"
}

// FindSocket picks the agent's socket: socket (--socket), then agent
// (--agent NAME), then $COLLIE_AGENT_SOCKET and $COLLIE_AGENT (set for
// the agent's own commands), then the only socket in
// $XDG_RUNTIME_DIR/desk. Every local program of the agent (collie ask,
// collie mcp, the hook) finds it the same way.
func FindSocket(socket, agent string, getenv func(string) string) (string, error) {
	if socket != "" {
		return socket, nil
	}
	run := getenv("XDG_RUNTIME_DIR")
	desk := filepath.Join(run, "desk")
	if agent == "" {
		if s := getenv("COLLIE_AGENT_SOCKET"); s != "" {
			return s, nil
		}
		agent = getenv("COLLIE_AGENT")
	}
	if run == "" {
		return "", errors.New("XDG_RUNTIME_DIR is not set; give --socket PATH")
	}
	if agent != "" {
		if strings.ContainsAny(agent, "/\x00") || agent == "." || agent == ".." {
			return "", fmt.Errorf("the agent name %q is not valid; give the NAME of collie-agent@NAME", agent)
		}
		return filepath.Join(desk, agent+".sock"), nil
	}
	matches, _ := filepath.Glob(filepath.Join(desk, "*.sock"))
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return "", fmt.Errorf("no agent socket in %s; start one (systemctl --user enable --now collie-agent@NAME.socket) or give --agent NAME", desk)
	}
	var names []string
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".sock"))
	}
	sort.Strings(names)
	return "", fmt.Errorf("several agents listen in %s (%s); choose one with --agent NAME", desk, strings.Join(names, ", "))
}

// Transport carries one request to the agent, or to the bridge, and
// returns its reply. The agent's is socketTransport (HTTP/1.1 over its
// socket, http1.go); the bridge's is collie ask's, over HTTPS.
type Transport interface {
	Do(ctx context.Context, method, path string, body []byte) (*Reply, error)
}

// Reply is a reply's status and body; Length is the body's declared
// length, -1 when not declared.
type Reply struct {
	Status int
	Length int64
	Body   io.ReadCloser
}

// Client talks to one agent over its socket, or to the bridge. Like the
// bridge, it walks the socket's path before every connection (T2) and
// talks only to a listener of its own user (L3): a question can carry
// what a tool is about to do, which is not for another user's program.
type Client struct{ t Transport }

// Dial connects to the agent's socket at path as Client does: exactly the
// socket the walk of its path checked, and only a listener of the user's
// own.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	uid := os.Getuid()
	// Dial connects to exactly the socket the walk checked (T2).
	conn, err := sockpath.Dial(ctx, path, uid)
	if err != nil {
		var se *sockpath.Error
		if errors.As(err, &se) && se.Connect && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no socket at %s; is the agent running?", path)
		}
		return nil, err
	}
	if err := peercred.SameUser(conn, uid); err != nil {
		conn.Close()
		return nil, sockpath.ListenerError(path, err)
	}
	return conn, nil
}

// AgentError is an error reply from the agent (or the bridge), its code
// and message cleaned.
type AgentError struct {
	Status        int
	Code, Message string
}

func (e *AgentError) Error() string { return e.Message + " (" + e.Code + ")" }

// Call sends a request and decodes the reply into out.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = b
	}
	resp, err := c.t.Do(ctx, method, path, body)
	if err != nil {
		return cleanErr(err)
	}
	defer resp.Body.Close()
	if resp.Status != 200 {
		data, _ := wire.ReadCapped(resp.Body, resp.Length, wire.ReplyCap)
		if code, msg, ok := wire.DecodeError(data); ok {
			return &AgentError{Status: resp.Status, Code: code, Message: msg}
		}
		return fmt.Errorf("the agent answered %s", wire.StatusText(resp.Status))
	}
	if err := wire.DecodeReply(resp.Body, resp.Length, out); err != nil {
		return fmt.Errorf("the agent's reply: %w", cleanErr(err))
	}
	return nil
}

// DescribeErr says what went wrong with a question to the agent at path
// (or the bridge), for a message.
func (e Env) DescribeErr(err error, path string) string {
	var ae *AgentError
	switch {
	case errors.As(err, &ae):
		return e.who() + " refused the question: " + ae.Message
	case errors.Is(err, context.Canceled):
		return "stopped before an answer came"
	case e.Remote != nil && hint.Of(err) != "":
		// The agent session's own error (none stored, refresh refused):
		// it says what happened, and KeepHint carries its fix.
		var ue errUnreachable
		if errors.As(err, &ue) {
			err = ue.err
		}
		return err.Error()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		if e.Remote != nil {
			return "the bridge closed the connection without answering; check that it runs (systemctl --user status collie on its host)"
		}
		return agentClosed(path, e.Getenv)
	}
	var ue errUnreachable
	if errors.As(err, &ue) {
		return "cannot reach " + e.who() + ": " + ue.Error()
	}
	return err.Error()
}

// KeepHint is err carrying the fix cause carries, if any.
func KeepHint(err, cause error) error {
	if h := hint.Of(cause); h != "" {
		return hint.Wrap(err, h)
	}
	return err
}

// Unasked is err as collie ask reports a question it could not ask or
// whose answer did not come: cleaned for the terminal, with its fix.
func (e Env) Unasked(err error, path string) error {
	return KeepHint(errors.New(sanitize.TerminalLine(e.DescribeErr(err, path))), err)
}

// errUnreachable marks an error before the agent said anything.
type errUnreachable struct{ err error }

func (e errUnreachable) Error() string { return e.err.Error() }
func (e errUnreachable) Unwrap() error { return e.err }

// Wait asks r and waits for its decision until deadline (zero: no
// deadline). A connection that fails in the middle is tried again for up
// to retryFor, so an agent restart does not end the wait.
func (c *Client) Wait(ctx context.Context, r wire.AskRequest, deadline time.Time) (wire.AskReply, error) {
	const retryFor = 30 * time.Second
	var failingSince time.Time
	first := true
	for {
		wait := time.Duration(wire.MaxAskWait) * time.Second
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return wire.AskReply{Status: wire.StatusTimedOut, Reason: "no answer in time; denied by default"}, nil
			}
			wait = min(wait, left.Round(time.Second)+time.Second)
		}
		r.WaitSeconds = int64(max(wait/time.Second, 1))
		rctx, cancel := context.WithTimeout(ctx, wait+15*time.Second)
		var rep wire.AskReply
		err := c.Call(rctx, "POST", wire.AskPath, r, &rep)
		cancel()
		var ae *AgentError
		switch {
		case err == nil:
			if rep.Status != wire.StatusPending {
				return cleanReply(rep), nil
			}
			failingSince, first = time.Time{}, false
			continue
		case errors.As(err, &ae) && first:
			// An agent from before the shortened and detail fields: the same question
			// without it, once.
			if old, ok := r.WithoutExtensions(ae.Code, ae.Message); ok {
				r = old
				continue
			}
			return wire.AskReply{}, err
		case errors.As(err, &ae), ctx.Err() != nil:
			return wire.AskReply{}, err
		case first:
			return wire.AskReply{}, errUnreachable{err}
		}
		if failingSince.IsZero() {
			failingSince = time.Now()
		}
		if time.Since(failingSince) > retryFor {
			return wire.AskReply{}, fmt.Errorf("lost the agent while waiting: %w", err)
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return wire.AskReply{}, ctx.Err()
		}
	}
}
