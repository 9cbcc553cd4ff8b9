package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
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
	a := startSocketAgent(t)
	run, sock, b := a.run, a.sock, a.board
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
	cv, _ := a.question(20 * time.Second)
	if c := durabletest.FindConv(b.Snapshot(), cv); c.Title != "collie-test in ~/proj" {
		t.Fatalf("the session's conversation is titled %q", c.Title)
	}
	a.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
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
