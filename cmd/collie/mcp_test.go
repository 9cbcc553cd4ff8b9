package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/durable"
	"github.com/collie-linux/collie/internal/durable/board"
	"github.com/collie-linux/collie/internal/durable/durabletest"
	"github.com/collie-linux/collie/internal/wire"
)

// TestMCPOverStdio_D1: `collie mcp` run as its own process, as an MCP
// client starts it, finds the agent's socket in $COLLIE_AGENT_SOCKET (what
// a parent program that runs the client under its agent sets), speaks
// nothing but the protocol on stdout, asks through the socket with the
// path walk and the peer check, and closes its conversation when the
// client closes its stdin.
func TestMCPOverStdio_D1(t *testing.T) {
	collie, err := exec.LookPath("collie") // the test binary, as testscript.Main installs it
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.MkdirTemp("", "mcp-") // short: a socket path has a 108-byte limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	sock := filepath.Join(run, "desk", "a.sock")
	l, _, err := durable.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
	if err != nil {
		t.Fatal(err)
	}
	b, err := board.New(srv, board.Options{Space: wire.Space{ID: "main", Title: "A"}, Tab: wire.Space{ID: "main", Title: "Main"},
		Main: struct{ ID, Title string }{"main", "Questions"}, Log: durabletest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	// The check is off: this test answers, from the process that hosts the agent.
	go func() { srv.ServeTransport(ctx, l, durable.Transport{Unchecked: true}); close(served) }()
	t.Cleanup(func() { cancel(); <-served; b.Stop() })

	home := filepath.Join(run, "home")
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(collie, "mcp")
	cmd.Dir = proj
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_RUNTIME_DIR=" + run, "COLLIE_AGENT_SOCKET=" + sock}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "collie-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}

	res := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_yes_no", Arguments: map[string]any{"question": "Ship 1.2?"}})
		if err != nil {
			t.Error(err)
		}
		res <- r
	}()
	var cv string
	var q wire.Question
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; q.ID == "" && time.Now().Before(deadline); <-tick.C {
		for _, c := range b.Snapshot().Spaces[0].Tabs[0].Conversations {
			if len(c.Questions) == 1 {
				cv, q = c.ID, c.Questions[0]
				if c.Title != "collie-test in ~/proj" {
					t.Fatalf("the session's conversation is titled %q", c.Title)
				}
			}
		}
	}
	if q.ID == "" {
		t.Fatalf("no question within 20s; collie mcp said:\n%s", stderr.String())
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	body, _ := json.Marshal(wire.AnswerRequest{RequestID: "dev-1", Conversation: cv, Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
	resp, err := hc.Post("http://agent"+wire.AnswerPath, "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer: %v %v", resp, err)
	}
	resp.Body.Close()
	r := <-res
	if r == nil || r.IsError || len(r.Content) != 1 || r.Content[0].(*mcp.TextContent).Text != `{"answer":"yes"}` {
		t.Fatalf("result %+v", r)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v\n%s", err, stderr.String())
	}
	if c := durabletest.FindConv(b.Snapshot(), cv); !c.Closed {
		t.Fatalf("the conversation is open after collie mcp ended: %+v", c)
	}
	if strings.TrimSpace(stderr.String()) != "" {
		t.Fatalf("collie mcp wrote to stderr:\n%s", stderr.String())
	}
}
