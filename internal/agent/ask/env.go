package ask

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Env is what a command works with.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Prog           string // "collie ask" or "collie-agent ask", for messages
	// Remote, when set, carries the question to the bridge's agent API
	// instead of an agent's socket: collie ask in an agent environment.
	// Its transport sends a request's path ("/v1/ask") to the bridge with
	// the agent's bearer token; the loop is the same.
	Remote *http.Client
	// Refused, when set, is why no question can be asked here at all (an
	// incomplete agent environment): Run returns it as Unasked (exit 5)
	// after checking the command line, and the hook denies with it.
	Refused error
}

// hook is e as the hook package's Env.
func (e Env) hook() hook.Env {
	he := hook.Env{Stdin: e.Stdin, Stdout: e.Stdout, Stderr: e.Stderr, Getenv: e.Getenv, Refused: e.Refused}
	if e.Remote != nil {
		he.Remote = httpTransport{e.Remote}
	}
	return he
}

// httpTransport carries a request over an HTTP client: the bridge's, in
// an agent environment.
type httpTransport struct{ hc *http.Client }

func (t httpTransport) Do(ctx context.Context, method, path string, body []byte) (*hook.Reply, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set(wire.VersionHeader, "1")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			if inner := ue.Unwrap(); inner != nil {
				err = inner
			}
		}
		return nil, err
	}
	return &hook.Reply{Status: resp.StatusCode, Length: resp.ContentLength, Body: resp.Body}, nil
}

// SocketClient is an HTTP client of the agent listening at path, as
// collie ask's: it walks the path before every connection and talks only
// to a listener of the user's own. Requests go to "http://agent" + a
// route of collie-durable(7).
func SocketClient(path string) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return hook.Dial(ctx, path) },
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 16 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
