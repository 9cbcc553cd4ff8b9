package mcpserver

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

// TestAgentRestart_D1: the agent restarts while a question waits (its
// board, in memory, starts empty). The call is not lost: collie mcp tries
// the socket again, finds its conversation gone, opens a new one, asks
// again there, and the tap on the new agent answers the call.
func TestAgentRestart_D1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type agentRun struct {
			l      *memnet.Listener
			b      *board.Board
			cancel context.CancelFunc
			done   chan struct{}
		}
		start := func() *agentRun {
			a := &agentRun{l: memnet.New(), done: make(chan struct{})}
			srv, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
			if err != nil {
				t.Fatal(err)
			}
			a.b, err = board.New(srv, board.Options{Space: wire.Space{ID: "main", Title: "A"}, Tab: wire.Space{ID: "main", Title: "Main"},
				Main: struct{ ID, Title string }{"main", "Questions"}, Log: durabletest.Quiet()})
			if err != nil {
				t.Fatal(err)
			}
			var ctx context.Context
			ctx, a.cancel = context.WithCancel(context.Background())
			go func() { srv.ServeTransport(ctx, a.l, durable.Transport{Unchecked: true}); close(a.done) }()
			return a
		}
		stop := func(a *agentRun) { a.cancel(); a.l.Close(); <-a.done; a.b.Stop() }
		var cur atomic.Pointer[agentRun]
		cur.Store(start())
		dial := func(ctx context.Context, n, addr string) (net.Conn, error) {
			return cur.Load().l.DialContext(ctx, n, addr)
		}
		srv := New(Config{Agent: &http.Client{Transport: &http.Transport{DialContext: dial}}, Where: "a.sock", Cwd: "/w"})
		st, ct := mcp.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(t.Context())
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := make(chan *mcp.CallToolResult, 1)
		go func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_yes_no", Arguments: map[string]any{"question": "Survive?"}})
			if err != nil {
				t.Error(err)
			}
			res <- r
		}()
		synctest.Wait()
		old := cur.Load()
		if n := len(durabletest.FindConv(old.b.Snapshot(), "local-1").Questions); n != 1 {
			t.Fatalf("%d questions before the restart", n)
		}
		// The restart: the old agent goes, its socket refuses for a while,
		// then a new one with an empty board answers on it.
		down := memnet.New()
		down.Close()
		cur.Store(&agentRun{l: down})
		stop(old)
		time.Sleep(5 * time.Second)
		cur.Store(start())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		var q wire.Question
		var cv string
		for _, c := range cur.Load().b.Snapshot().Spaces[0].Tabs[0].Conversations {
			for _, x := range c.Questions {
				cv, q = c.ID, x
			}
		}
		if q.Title != "Survive?" || cv == "main" {
			t.Fatalf("after the restart the question is %+v in %q", q, cv)
		}
		// A paired device's tap, on the new agent's socket.
		device := &rig{t: t, agent: &http.Client{Transport: &http.Transport{DialContext: dial}}}
		device.post(wire.AnswerPath, wire.AnswerRequest{Header: wire.Header{RequestID: "d1"}, Conversation: cv, Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
		r := <-res
		if r == nil || r.IsError {
			t.Fatalf("the call after the restart: %+v", r)
		}
		cs.Close()
		<-served
		cancel()
		stop(cur.Load())
	})
}
