// Package durabletest serves a durable.Server on a private socket inside a
// test and talks to it over HTTP as the bridge and local programs do: a
// Client with the protocol's reads, writes and asks, a check of a reply's
// status and error code, builders for questions and answers, and a
// stand-in for the caller check for tests whose own process must be the
// caller. It is for tests only.
package durabletest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/callercheck"
	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// AllowAll stands in for the caller check where the test itself must be
// the caller: the real check refuses the agent's own process.
type AllowAll struct{ Calls int }

// Check implements durable.CallerChecker.
func (a *AllowAll) Check(syscall.Conn) (callercheck.Caller, error) {
	a.Calls++
	return callercheck.Caller{PID: 1}, nil
}

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Client talks to a server over its socket.
type Client struct {
	HC    *http.Client
	Path  string // the socket
	Token string // sent as a bearer token when set (the token transport)
}

// dial returns a client for the socket at path.
func dial(path string) *Client {
	return &Client{Path: path, HC: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}}
}

// Serve serves s on a new private socket with transport tr until the test
// ends, and returns a client for it.
func Serve(t testing.TB, s *durable.Server, tr durable.Transport) *Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "desk", "a.sock")
	l, _, err := durable.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ServeTransport(ctx, l, tr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return dial(path)
}

// Do sends a request and returns the reply's status and body.
func (c *Client) Do(t testing.TB, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://agent"+path, strings.NewReader(body))
	req.Header.Set(wire.VersionHeader, "1")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Post sends v as JSON.
func (c *Client) Post(t testing.TB, path string, v any) (int, string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(t, "POST", path, string(b))
}

// Want checks a reply's status and error code ("" for success).
func Want(t testing.TB, status int, body string, wantStatus int, code string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, body)
	}
	if code != "" {
		got, msg, ok := wire.DecodeError([]byte(body))
		if !ok || got != code {
			t.Fatalf("body %s, want error code %q", body, code)
		}
		if !strings.HasSuffix(msg, "") || len(msg) < 10 {
			t.Fatalf("error message %q is not a sentence", msg)
		}
	}
}

// Snapshot reads the snapshot and fails the test when the bridge's
// cleaning would drop any of it.
func (c *Client) Snapshot(t testing.TB) *wire.Snapshot {
	t.Helper()
	status, body := c.Do(t, "GET", wire.SnapshotPath, "")
	if status != 200 {
		t.Fatalf("snapshot: %d %s", status, body)
	}
	s, rep, err := wire.ParseSnapshot([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Dropped) > 0 {
		t.Fatalf("the board's snapshot lost objects in the bridge's cleaning: %+v", rep.Dropped)
	}
	return s
}

// FindConv returns the conversation id of the snapshot's first tab, or nil.
func FindConv(s *wire.Snapshot, id string) *wire.Conversation {
	for i := range s.Spaces[0].Tabs[0].Conversations {
		if c := &s.Spaces[0].Tabs[0].Conversations[i]; c.ID == id {
			return c
		}
	}
	return nil
}

// AsyncAsk asks and waits in the background, as collie ask does.
func (c *Client) AsyncAsk(t testing.TB, req wire.AskRequest) <-chan wire.AskReply {
	ch := make(chan wire.AskReply, 1)
	go func() {
		for {
			req.WaitSeconds = 2
			b, _ := json.Marshal(req)
			hreq, _ := http.NewRequest("POST", "http://agent"+wire.AskPath, strings.NewReader(string(b)))
			resp, err := c.HC.Do(hreq)
			if err != nil {
				close(ch)
				return
			}
			var rep wire.AskReply
			err = wire.DecodeReply(resp.Body, resp.ContentLength, &rep)
			resp.Body.Close()
			if err != nil || rep.Status != wire.StatusPending {
				ch <- rep
				return
			}
		}
	}()
	return ch
}

// WaitQuestion waits until a question with title is open and returns it
// as an ask reply would name it.
func (c *Client) WaitQuestion(t testing.TB, title string) wire.AskReply {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		for _, cv := range c.Snapshot(t).Spaces[0].Tabs[0].Conversations {
			for _, q := range cv.Questions {
				if q.Title == title {
					return wire.AskReply{Question: q.ID, Conversation: cv.ID, Status: wire.StatusPending}
				}
			}
		}
	}
	t.Fatalf("no open question %q within 5s", title)
	return wire.AskReply{}
}

// YesNo is a yes-no question.
func YesNo(id, title string) wire.AskRequest {
	return wire.AskRequest{RequestID: id, Kind: wire.AskYesNo, Title: title}
}

// Answer answers question q at revision rev with option opt.
func Answer(q wire.AskReply, rev int64, opt string) wire.AnswerRequest {
	return wire.AnswerRequest{Header: wire.Header{RequestID: "ans-" + q.Question + "-" + opt}, Conversation: q.Conversation, Question: q.Question, Revision: rev, OptionIDs: []string{opt}}
}
