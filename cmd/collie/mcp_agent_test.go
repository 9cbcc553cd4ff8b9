package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// socketAgent is a real durable agent (the reference board) on a socket
// in a runtime folder of its own, with its accepted connections counted,
// and a listener at the daemon's control socket counting them too.
type socketAgent struct {
	t             *testing.T
	run, sock     string
	board         *board.Board
	agent, bridge *countingListener
}

func startSocketAgent(t *testing.T) *socketAgent {
	t.Helper()
	run, err := os.MkdirTemp("", "mcp-") // short: a socket path has a 108-byte limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	a := &socketAgent{t: t, run: run, sock: filepath.Join(run, "desk", "a.sock")}
	l, _, err := durable.Listen(a.sock)
	if err != nil {
		t.Fatal(err)
	}
	a.agent = &countingListener{Listener: l}
	if err := os.MkdirAll(filepath.Join(run, "collie"), 0o700); err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("unix", filepath.Join(run, "collie", "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	a.bridge = &countingListener{Listener: cl}
	go func() {
		for {
			c, err := a.bridge.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	srv, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	a.board, err = board.New(srv, board.Options{Space: wire.Space{ID: "main", Title: "A"}, Tab: wire.Space{ID: "main", Title: "Main"},
		Main: struct{ ID, Title string }{"main", "Questions"}, Log: durabletest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	// The check is off: this test answers, from the process that hosts the agent.
	go func() { srv.ServeTransport(ctx, a.agent, durable.Transport{Unchecked: true}); close(served) }()
	t.Cleanup(func() { cancel(); cl.Close(); <-served; a.board.Stop() })
	return a
}

// question waits up to limit for one open question and returns it with
// its conversation.
func (a *socketAgent) question(limit time.Duration) (string, wire.Question) {
	a.t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		for _, c := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
			if len(c.Questions) == 1 {
				return c.ID, c.Questions[0]
			}
		}
	}
	a.t.Fatalf("no question within %s", limit)
	return "", wire.Question{}
}

// answer answers the open question as a paired device's write reaches
// the agent.
func (a *socketAgent) answer(ans wire.AnswerRequest) {
	a.t.Helper()
	cv, q := a.question(20 * time.Second)
	ans.RequestID, ans.Conversation, ans.Question, ans.Revision = "dev-"+q.ID, cv, q.ID, q.Revision
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", a.sock)
	}}}
	body, _ := json.Marshal(ans)
	resp, err := hc.Post("http://agent"+wire.AnswerPath, "application/json", bytes.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		a.t.Fatalf("answer: %s", resp.Status)
	}
}
