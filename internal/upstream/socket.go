// Package upstream is the bridge's side of the durable-agent protocol: it
// reads hello and snapshot from an agent, over a private Unix socket that is
// walked (T2) and whose listener's uid is checked (L3) before every
// connection.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/peercred"
	"github.com/collie-linux/collie/internal/sockpath"
	"github.com/collie-linux/collie/internal/wire"
)

// Unreachable is an error that says why an agent cannot be reached. Reason
// is the exact sentence shown in `collie durable list` (T3, T4).
type Unreachable struct {
	Reason string
	Err    error // the cause, when there is one beyond the reason
}

func (e *Unreachable) Error() string { return e.Reason }
func (e *Unreachable) Unwrap() error { return e.Err }

// Socket reads a durable agent over its Unix socket.
type Socket struct {
	path string
	uid  int
	hc   *http.Client
}

// NewSocket returns a client for the agent listening at path, for user uid.
func NewSocket(path string, uid int) *Socket {
	s := &Socket{path: path, uid: uid}
	s.hc = &http.Client{
		Transport: &http.Transport{
			DialContext: s.dial,
			// A new connection for every request, so the walk runs before
			// each one (T2) and a path that turned unsafe is caught at once (T4).
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: 16 << 10,
			ResponseHeaderTimeout:  10 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s
}

// dial runs the T2 walk, connects, and refuses a listener that is not ours.
func (s *Socket) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	if err := sockpath.Check(s.path, s.uid); err != nil {
		return nil, &Unreachable{Reason: err.Error(), Err: err}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", s.path)
	if err != nil {
		return nil, &Unreachable{Reason: dialReason(s.path, err), Err: err}
	}
	// The peer of a socket-activated listener is the systemd user manager
	// that made it: only its uid means something.
	if err := peercred.SameUser(c.(*net.UnixConn), s.uid); err != nil {
		c.Close()
		return nil, &Unreachable{Reason: fmt.Sprintf("the socket's listener is not you: %v", err), Err: err}
	}
	return c, nil
}

func dialReason(path string, err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "no socket at " + path
	case errors.Is(err, syscall.ECONNREFUSED):
		return "nothing is listening at " + path + "; start the agent (or its .socket unit)"
	}
	return fmt.Sprintf("cannot connect to %s: %v", path, err)
}

// Hello asks the agent who it is.
func (s *Socket) Hello(ctx context.Context) (*wire.Hello, error) {
	resp, err := s.get(ctx, wire.HelloPath, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	return wire.DecodeHello(resp.Body, resp.ContentLength)
}

// Read is the outcome of one snapshot poll.
type Read struct {
	Snapshot    *wire.Snapshot // nil when NotModified
	Report      wire.Report
	ETag        string
	NotModified bool
}

// Snapshot reads the agent's state, sending etag so an unchanged state
// costs a 304 (K7).
func (s *Socket) Snapshot(ctx context.Context, etag string) (Read, error) {
	resp, err := s.get(ctx, wire.SnapshotPath, etag)
	if err != nil {
		return Read{}, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return Read{ETag: etag, NotModified: true}, nil
	case http.StatusOK:
	default:
		return Read{}, statusError(resp)
	}
	snap, rep, err := wire.DecodeSnapshot(resp.Body, resp.ContentLength)
	if err != nil {
		return Read{}, err
	}
	return Read{Snapshot: snap, Report: rep, ETag: resp.Header.Get("ETag")}, nil
}

func (s *Socket) get(ctx context.Context, path, etag string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent"+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set(wire.VersionHeader, strconv.Itoa(wire.Version))
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		var u *Unreachable
		if errors.As(err, &u) {
			return nil, u
		}
		return nil, fmt.Errorf("ask the agent: %w", unwrapURL(err))
	}
	return resp, nil
}

// unwrapURL drops net/http's "Get "http://agent/...": " prefix, which names
// a made-up host and helps no one.
func unwrapURL(err error) error {
	if ue, ok := err.(interface{ Unwrap() error }); ok {
		if inner := ue.Unwrap(); inner != nil {
			return inner
		}
	}
	return err
}

// statusError reads an agent's error body (capped) into an error.
func statusError(resp *http.Response) error {
	data, _ := wire.ReadCapped(resp.Body, -1, 4<<10)
	if code, msg, ok := wire.DecodeError(data); ok {
		return fmt.Errorf("the agent answered %d %s: %s", resp.StatusCode, code, msg)
	}
	return fmt.Errorf("the agent answered %s", resp.Status)
}
