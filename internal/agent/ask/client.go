package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/linux/peercred"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Env is what a command works with.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Prog           string // "collie ask" or "collie-agent ask", for messages
	// Remote, when set, carries the question to the bridge's agent API
	// instead of an agent's socket: `collie ask` in an agent environment
	//. Its transport sends a request's path ("/v1/ask") to the
	// bridge with the agent's bearer token; the loop is the same.
	Remote *http.Client
	// Refused, when set, is why no question can be asked here at all (an
	// incomplete agent environment): Run returns it as Unasked (exit 5)
	// after checking the command line, and the hook denies with it.
	Refused error
}

// clientFor is the client of the agent at path, or the bridge's over Remote.
func (e Env) clientFor(path string) *client {
	if e.Remote != nil {
		return &client{hc: e.Remote}
	}
	return newClient(path)
}

// who is what answers the question, for messages.
func (e Env) who() string {
	if e.Remote != nil {
		return "the bridge"
	}
	return "the agent"
}

// findSocket picks the agent's socket: --socket, then --agent NAME, then
// $COLLIE_AGENT_SOCKET and $COLLIE_AGENT (set for the agent's own
// commands), then the only socket in $XDG_RUNTIME_DIR/desk.
func findSocket(socket, agent string, getenv func(string) string) (string, error) {
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

// client talks to one agent over its socket. Like the bridge, it walks
// the socket's path before every connection (T2) and talks only to a
// listener of its own user (L3): a question can carry what a tool is about
// to do, which is not for another user's program.
type client struct {
	path string
	hc   *http.Client
}

func newClient(path string) *client {
	c := &client{path: path}
	c.hc = &http.Client{
		Transport: &http.Transport{
			DialContext:            c.dial,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 16 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

func (c *client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	uid := os.Getuid()
	// Dial connects to exactly the socket the walk checked (T2).
	conn, err := sockpath.Dial(ctx, c.path, uid)
	if err != nil {
		var se *sockpath.Error
		if errors.As(err, &se) && se.Connect && errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no socket at %s; is the agent running?", c.path)
		}
		return nil, err
	}
	if err := peercred.SameUser(conn, uid); err != nil {
		conn.Close()
		return nil, sockpath.ListenerError(c.path, err)
	}
	return conn, nil
}

// agentError is an error reply from the agent.
type agentError struct {
	Status        int
	Code, Message string
}

func (e *agentError) Error() string { return e.Message + " (" + e.Code + ")" }

// call sends a request and decodes the reply into out.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	var body *bytes.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	} else {
		body = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set(wire.VersionHeader, "1")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			if inner := ue.Unwrap(); inner != nil {
				err = inner
			}
		}
		return cleanErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := wire.ReadCapped(resp.Body, resp.ContentLength, wire.ReplyCap)
		if code, msg, ok := wire.DecodeError(data); ok {
			return &agentError{Status: resp.StatusCode, Code: code, Message: msg}
		}
		return fmt.Errorf("the agent answered %s", wire.StatusText(resp.StatusCode))
	}
	if err := wire.DecodeReply(resp.Body, resp.ContentLength, out); err != nil {
		return fmt.Errorf("the agent's reply: %w", cleanErr(err))
	}
	return nil
}

// errUnreachable marks an error before the agent said anything.
type errUnreachable struct{ err error }

func (e errUnreachable) Error() string { return e.err.Error() }
func (e errUnreachable) Unwrap() error { return e.err }

// wait asks r and waits for its decision until deadline (zero: no
// deadline). A connection that fails in the middle is tried again for up
// to retryFor, so an agent restart does not end the wait.
func (c *client) wait(ctx context.Context, r wire.AskRequest, deadline time.Time) (wire.AskReply, error) {
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
		err := c.call(rctx, "POST", wire.AskPath, r, &rep)
		cancel()
		var ae *agentError
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
