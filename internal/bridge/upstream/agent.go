// Package upstream is the bridge's side of the durable-agent protocol: it
// reads hello and snapshot from an agent over a private Unix socket (walked
// before every request, T2, over a kept-alive connection whose listener's
// uid was checked when it was made, L3) or over HTTPS with a bearer token
// (K1–K7). A snapshot read may wait at the agent for a change
// (see [Waiter]). Both transports keep one connection to an agent alive
// between requests and speak HTTP/1.1 over it themselves, so that a read
// held at the agent costs its caller's goroutine and one descriptor.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Client reads one durable agent.
type Client interface {
	Hello(ctx context.Context) (*wire.Hello, error)
	Snapshot(ctx context.Context, etag string) (Read, error)
	Write(ctx context.Context, path string, req wire.WriteRequest) (*wire.WriteReply, error)
}

// Unreachable is an error that says why an agent cannot be reached. Reason
// is the exact sentence shown in `collie durable list` (T3, T4, K6),
// cleaned (see unreachable and cleanErr): it may name what the agent sent.
type Unreachable struct {
	Reason string
	Err    error // the cause, when there is one beyond the reason
}

func (e *Unreachable) Error() string { return agentText(e.Reason) }
func (e *Unreachable) Unwrap() error { return e.Err }

// ReasonTokenRefused is shown for an agent that answered 401 (K6).
const ReasonTokenRefused = "the agent refused the token"

// Read is the outcome of one snapshot read.
type Read struct {
	Snapshot    *wire.Snapshot // nil when NotModified
	Report      wire.Report
	ETag        string
	NotModified bool
	// Lineage relates this state to the reader's earlier ones, so that
	// what a delta did not touch is known unchanged (wire.Lineage); nil
	// when NotModified.
	Lineage *wire.Lineage
	// Delta says the agent answered with a delta (wire.ExtDelta).
	Delta bool
	// Waited says the agent honoured a waiting read (see Waiter): it
	// marked its answer, and a 304 came no sooner than the wait it named.
	// False for a read without a wait, and for an agent that does not know
	// waiting reads: poll that one at the seed's cadence (K8).
	Waited bool
}

// reader speaks the protocol over any HTTP client; the transports differ
// only in how they connect and authenticate.
type reader struct {
	base  string // URL the paths are joined to, without a trailing slash
	hc    *http.Client
	token string // sent as a bearer token when set; never logged
	// timeout bounds a request beyond its wait: until the reply's headers
	// (socket), or to the end of its body too when whole is set (HTTPS, K2).
	timeout time.Duration
	whole   bool
	deltas  deltaState // the last snapshot read, for deltas (delta.go)
}

func (r *reader) hello(ctx context.Context) (*wire.Hello, error) {
	resp, err := r.get(ctx, wire.HelloPath, "", 0, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	return wire.DecodeHello(resp.Body, resp.ContentLength)
}

// get sends a read: a GET with no body, the protocol version, the last
// ETag, the wait in seconds when there is one, and the token when there is
// one (K7). delta announces that the read takes a delta from etag.
func (r *reader) get(ctx context.Context, path, etag string, wait int, delta bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set(wire.VersionHeader, strconv.Itoa(wire.Version))
	// The bridge takes a question's push wording (D4) and its detail, the
	// whole text a yes would run (X3).
	ext := wire.ExtPush + ", " + wire.ExtDetail
	if delta {
		ext += ", " + wire.ExtDelta
	}
	req.Header.Set(wire.ExtensionsHeader, ext)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if wait > 0 {
		req.Header.Set(wire.WaitHeader, strconv.Itoa(wait))
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.do(req, time.Duration(wait)*time.Second)
	if err != nil {
		var u *Unreachable
		if errors.As(err, &u) {
			return nil, u
		}
		return nil, wire.NewCleanError("ask the agent: "+agentText(unwrapURL(err).Error()), err)
	}
	return resp, nil
}

// unwrapURL drops net/http's `Get "URL": ` prefix; the reason that follows
// is what the user needs, and a made-up host helps no one.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// statusError turns a reply that is not a success into an error. Redirects
// are never followed (K2), and 401 means the token was refused (K6).
func statusError(resp *http.Response) error {
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return unreachable(ReasonTokenRefused, nil)
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return unreachable(fmt.Sprintf("the agent answered with a redirect (%d); Collie never follows redirects, so give the agent's final URL", resp.StatusCode), nil)
	}
	data, _ := wire.ReadCapped(resp.Body, -1, 4<<10)
	if code, msg, ok := wire.DecodeError(data); ok {
		return wire.NewCleanError(agentText(fmt.Sprintf("the agent answered %s: %s: %s", wire.StatusText(resp.StatusCode), code, msg)), nil)
	}
	// resp.Status carries the agent's own reason phrase: never shown.
	return wire.NewCleanError("the agent answered "+wire.StatusText(resp.StatusCode), nil)
}
