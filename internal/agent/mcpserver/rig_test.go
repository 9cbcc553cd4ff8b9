package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

// rig is a real durable agent (the reference board behind durable's
// server) on an in-memory listener, collie mcp's server asking through
// it, and the Go SDK's own client over in-memory transports. Inside a
// testing/synctest bubble every part blocks durably, so the bubble's
// clock runs the timeouts and the progress ticks.
type rig struct {
	t     *testing.T
	board *board.Board
	agent *http.Client // the agent's socket, as a paired device's writes reach it
	cs    *mcp.ClientSession
	srv   *Server
	l     *memnet.Listener
	end   func() // ends the MCP session and waits for the server

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
}

func newRig(t *testing.T, cfg Config) *rig {
	t.Helper()
	r := &rig{t: t}
	l := memnet.New()
	dsrv, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	r.board, err = board.New(dsrv, board.Options{
		Space: wire.Space{ID: "main", Title: "A"}, Tab: wire.Space{ID: "main", Title: "Main"},
		Main: struct{ ID, Title string }{"main", "Questions"}, Log: durabletest.Quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	// The caller check is off: here the test both asks and answers, which
	// the check would refuse (the e2e tests answer with it on).
	go func() { dsrv.ServeTransport(ctx, l, durable.Transport{Unchecked: true}); close(served) }()
	r.agent = &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}

	r.l = l
	if cfg.Agent == nil {
		cfg.Agent = &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}
	}
	if cfg.Where == "" {
		cfg.Where = "/run/user/1000/desk/a.sock"
	}
	cfg.Cwd, cfg.Home = "/home/u/src/app", "/home/u"
	r.srv = New(cfg)
	st, ct := mcp.NewInMemoryTransports()
	serveDone := make(chan error, 1)
	go func() { serveDone <- r.srv.Serve(ctx, st) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.328"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.mu.Lock()
			r.progress = append(r.progress, req.Params)
			r.mu.Unlock()
		},
	})
	r.cs, err = client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	r.end = func() {
		once.Do(func() {
			r.cs.Close()
			if err := <-serveDone; err != nil {
				t.Errorf("Serve: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		r.end()
		cancel()
		<-served
		r.board.Stop()
	})
	return r
}

// call calls a tool in the background.
func (r *rig) call(ctx context.Context, name string, args any, token any) <-chan callResult {
	ch := make(chan callResult, 1)
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	go func() {
		res, err := r.cs.CallTool(ctx, p)
		ch <- callResult{res, err}
	}()
	return ch
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

// open returns the questions open on the agent, by conversation.
func (r *rig) open() map[string][]wire.Question {
	out := map[string][]wire.Question{}
	for _, c := range r.board.Snapshot().Spaces[0].Tabs[0].Conversations {
		if len(c.Questions) > 0 {
			out[c.ID] = c.Questions
		}
	}
	return out
}

// only returns the one open question and its conversation.
func (r *rig) only() (string, wire.Question) {
	r.t.Helper()
	open := r.open()
	for cv, qs := range open {
		if len(open) == 1 && len(qs) == 1 {
			return cv, qs[0]
		}
	}
	r.t.Fatalf("want one open question, have %+v", open)
	return "", wire.Question{}
}

// conv returns the conversation id on the agent's snapshot.
func (r *rig) conv(id string) *wire.Conversation {
	return durabletest.FindConv(r.board.Snapshot(), id)
}

// answer answers the one open question as a paired device does: POST
// /v1/answer on the agent, at the revision shown.
func (r *rig) answer(a wire.AnswerRequest) {
	r.t.Helper()
	cv, q := r.only()
	a.RequestID, a.Conversation, a.Question, a.Revision = "dev-"+q.ID, cv, q.ID, q.Revision
	b, _ := json.Marshal(a)
	req, _ := http.NewRequest("POST", "http://agent"+wire.AnswerPath, bytes.NewReader(b))
	req.Header.Set(wire.VersionHeader, "1")
	resp, err := r.agent.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		r.t.Fatalf("answer: %s", resp.Status)
	}
}

// result waits for a call's result and returns its structured content
// (decoded) and its first text.
func (r *rig) result(ch <-chan callResult) (res *mcp.CallToolResult, structured map[string]any, text string) {
	r.t.Helper()
	var cr callResult
	select {
	case cr = <-ch:
	case <-time.After(2 * MaxTimeout):
		r.t.Fatal("the call never returned")
	}
	if cr.err != nil {
		r.t.Fatalf("protocol error: %v", cr.err)
	}
	res = cr.res
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
	}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return res, structured, text
}
