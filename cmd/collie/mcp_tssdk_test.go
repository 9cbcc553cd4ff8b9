//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/suite/agentclients"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// tsClient is testdata/mcp/tsclient.mjs running under node.
type tsClient struct {
	t    *testing.T
	in   io.WriteCloser
	out  *bufio.Scanner
	cmd  *exec.Cmd
	errs bytes.Buffer
}

// tsEvent is one line the script prints.
type tsEvent struct {
	Ev           string          `json:"ev"`
	Server       map[string]any  `json:"server"`
	Capabilities map[string]any  `json:"capabilities"`
	Instructions string          `json:"instructions"`
	Tools        []tsTool        `json:"tools"`
	Result       json.RawMessage `json:"result"`
	Code         *int            `json:"code"`
	Message      string          `json:"message"`
	Stderr       string          `json:"stderr"`
}

type tsTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

type tsResult struct {
	IsError           bool           `json:"isError"`
	StructuredContent map[string]any `json:"structuredContent"`
	Content           []struct {
		Type, Text string
	} `json:"content"`
}

func (c *tsClient) send(cmd map[string]any) {
	c.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("to the TypeScript client: %v\n%s", err, c.errs.String())
	}
}

func (c *tsClient) next() tsEvent {
	c.t.Helper()
	if !c.out.Scan() {
		c.t.Fatalf("the TypeScript client ended: %v\n%s", c.out.Err(), c.errs.String())
	}
	var e tsEvent
	if err := json.Unmarshal(c.out.Bytes(), &e); err != nil {
		c.t.Fatalf("%v: %s", err, c.out.Bytes())
	}
	return e
}

// call calls a tool and returns its result; ask, when set, runs while
// the call waits (it answers the question).
func (c *tsClient) call(name string, args map[string]any, ask func()) tsResult {
	c.t.Helper()
	c.send(map[string]any{"op": "call", "name": name, "arguments": args})
	if ask != nil {
		ask()
	}
	e := c.next()
	if e.Ev != "result" {
		c.t.Fatalf("%s: %+v, want a result", name, e)
	}
	var r tsResult
	if err := json.Unmarshal(e.Result, &r); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// TestMCPTypeScriptSDK_D1 drives `collie mcp` with the MCP SDK for
// TypeScript (@modelcontextprotocol/sdk 1.32.2, the client most agent
// frameworks use) over stdio, so that a second implementation of the
// protocol agrees with the Go SDK's server on the wire: initialize,
// tools/list with each tool's schemas, each tool answered, progress while
// a question waits (keeping the SDK's own timeout from running out), a call the client gives up on (its own timeout, which
// sends notifications/cancelled) withdrawn from the device, malformed
// calls' errors, and the conversation closed when the client closes. An
// idle server makes no connection to the agent or to the daemon.
func TestMCPTypeScriptSDK_D1(t *testing.T) {
	sdk := filepath.Join(agentclients.Prefix(), "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "stdio.js")); err != nil {
		testenv.Unavailablef(t, "@modelcontextprotocol/sdk 1.32.2 is not installed in %s (run .ci/deps as root)", agentclients.Prefix())
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not installed (see .ci/deps)")
	}
	collie, err := exec.LookPath("collie") // the test binary, as testscript.Main installs it
	if err != nil {
		t.Fatal(err)
	}
	a := startSocketAgent(t)
	home := filepath.Join(a.run, "home")
	proj := filepath.Join(home, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	script, err := filepath.Abs("testdata/mcp/tsclient.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// The SDK starts the server with a few variables of its own
	// environment (HOME, PATH, ...) and those it is given: here only the
	// runtime folder, where collie mcp finds the only agent's socket.
	c := &tsClient{t: t}
	c.cmd = exec.CommandContext(ctx, node, script, sdk, collie, proj, "XDG_RUNTIME_DIR="+a.run)
	c.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	c.cmd.Stderr = &c.errs
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewScanner(stdout)
	c.out.Buffer(nil, 4<<20)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.in.Close(); c.cmd.Wait() })

	init := c.next()
	if init.Ev != "init" {
		t.Fatalf("connect: %+v", init)
	}
	if init.Server["name"] != "collie" || init.Capabilities["tools"] == nil || !strings.Contains(init.Instructions, "ask_yes_no") {
		t.Errorf("initialize: server %v, capabilities %v, instructions %q", init.Server, init.Capabilities, init.Instructions)
	}

	c.send(map[string]any{"op": "list"})
	tools := c.next()
	var names []string
	schemas := map[string]tsTool{}
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		schemas[tl.Name] = tl
	}
	slices.Sort(names)
	if want := []string{"approve", "ask_choice", "ask_form", "ask_text", "ask_yes_no", "notify"}; !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v, want %v", names, want)
	}
	for _, want := range []struct{ tool, in, out string }{
		{"ask_yes_no", `"required":["question"]`, `"enum":["yes","no"]`},
		{"ask_choice", `"minItems":2`, `"required":["answer"]`},
		{"ask_form", `"pattern":"^[A-Za-z0-9._-]{1,64}$"`, `"answer":{"type":"object"`},
		{"notify", `"required":["message"]`, `"posted":{"type":"boolean"}`},
		{"approve", `"required":["tool_name","input"]`, ""},
	} {
		tl := schemas[want.tool]
		if !strings.Contains(string(tl.InputSchema), want.in) || !strings.Contains(string(tl.OutputSchema), want.out) || tl.Description == "" {
			t.Errorf("%s: input schema %s, output schema %s; want %s and %s", want.tool, tl.InputSchema, tl.OutputSchema, want.in, want.out)
		}
	}

	// Idle: connected and listed, and no call yet. The window is what is
	// observed (the server has no timer of its own to wait for; the
	// protocol test checks an hour on a fake clock).
	<-time.After(2 * time.Second)
	if n, m := a.agent.n.Load(), a.bridge.n.Load(); n != 0 || m != 0 {
		t.Errorf("an idle collie mcp connected %d times to the agent and %d times to the daemon; want none", n, m)
	}

	t.Run("ask_yes_no with progress", func(t *testing.T) {
		c.t = t
		// The SDK's timeout, 7 s, is shorter than the wait (two progress
		// notifications, 5 s apart): each notification restarts it.
		c.send(map[string]any{"op": "call", "name": "ask_yes_no", "progress": true, "timeoutMs": 7000, "resetTimeoutOnProgress": true,
			"arguments": map[string]any{"question": "Ship 1.2?", "details": "CI passed."}})
		cv, q := a.question(20 * time.Second)
		if conv := durabletest.FindConv(a.board.Snapshot(), cv); conv.Title != "ts-sdk-client in ~/proj" || q.Title != "Ship 1.2?" {
			t.Errorf("the card %q in the conversation %q", q.Title, conv.Title)
		}
		for range 2 {
			if p := c.next(); p.Ev != "progress" {
				t.Fatalf("want progress notifications while the question waits, have %+v", p)
			}
		}
		a.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}, Reason: "go ahead"})
		e := c.next()
		for e.Ev == "progress" {
			e = c.next()
		}
		var r tsResult
		if e.Ev != "result" || json.Unmarshal(e.Result, &r) != nil || r.IsError ||
			r.StructuredContent["answer"] != "yes" || r.StructuredContent["note"] != "go ahead" {
			t.Fatalf("result %+v %s", e, e.Result)
		}
	})
	t.Run("ask_choice", func(t *testing.T) {
		c.t = t
		r := c.call("ask_choice", map[string]any{"question": "Where to?", "options": []string{"staging", "production"}},
			func() { a.answer(wire.AnswerRequest{OptionIDs: []string{"c2"}}) })
		if r.IsError || r.StructuredContent["answer"] != "production" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("ask_text", func(t *testing.T) {
		c.t = t
		r := c.call("ask_text", map[string]any{"question": "Branch?"}, func() { a.answer(wire.AnswerRequest{Text: "release/1.4"}) })
		if r.IsError || r.StructuredContent["answer"] != "release/1.4" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("ask_form", func(t *testing.T) {
		c.t = t
		r := c.call("ask_form", map[string]any{"question": "Release", "fields": []map[string]string{{"name": "version"}, {"name": "notes", "label": "Notes"}}},
			func() { a.answer(wire.AnswerRequest{Values: map[string]string{"version": "1.4.0", "notes": "faster"}}) })
		ans, _ := r.StructuredContent["answer"].(map[string]any)
		if r.IsError || ans["version"] != "1.4.0" || ans["notes"] != "faster" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("approve", func(t *testing.T) {
		c.t = t
		r := c.call("approve", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf build"}, "tool_use_id": "toolu_ts1"},
			func() { a.answer(wire.AnswerRequest{OptionIDs: []string{"no"}}) })
		if r.IsError || len(r.Content) != 1 || !strings.HasPrefix(r.Content[0].Text, `{"behavior":"deny","message":"The user denied`) {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("notify", func(t *testing.T) {
		c.t = t
		r := c.call("notify", map[string]any{"message": "Build 42 is green."}, nil)
		if r.IsError || r.StructuredContent["posted"] != true {
			t.Fatalf("%+v", r)
		}
		posted := false
		for _, cv := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
			for _, it := range cv.Items {
				posted = posted || (cv.ID != "main" && it.Text == "Build 42 is green.")
			}
		}
		if !posted {
			t.Error("the message is not in the session's conversation")
		}
	})
	t.Run("the client's own timeout withdraws the question", func(t *testing.T) {
		c.t = t
		c.send(map[string]any{"op": "call", "name": "ask_yes_no", "timeoutMs": 1500, "arguments": map[string]any{"question": "Still there?"}})
		a.question(20 * time.Second)
		e := c.next()
		if e.Ev != "error" || e.Code == nil || *e.Code != -32001 {
			t.Fatalf("want the SDK's request timeout (-32001), have %+v", e)
		}
		deadline := time.Now().Add(20 * time.Second)
		for open := true; open; {
			open = false
			for _, cv := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
				open = open || len(cv.Questions) > 0
			}
			if open && time.Now().After(deadline) {
				t.Fatal("the question is still open on the device after the client gave up")
			}
			if open {
				<-time.After(20 * time.Millisecond)
			}
		}
	})
	t.Run("malformed calls", func(t *testing.T) {
		c.t = t
		for _, tc := range []struct {
			name string
			args map[string]any
			want string
		}{
			{"ask_yes_no", map[string]any{}, "question"},
			{"ask_yes_no", map[string]any{"question": "Q?", "timeout": "soon"}, "timeout"},
			{"ask_choice", map[string]any{"question": "Q?", "options": []string{"only"}}, "options"},
			{"ask_yes_no", map[string]any{"question": "Q?", "colour": "red"}, "colour"},
		} {
			r := c.call(tc.name, tc.args, nil)
			t.Logf("%s %v: %+v", tc.name, tc.args, r.Content)
			if !r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, tc.want) {
				t.Errorf("%s %v: %+v, want a tool error naming %s", tc.name, tc.args, r, tc.want)
			}
		}
		c.send(map[string]any{"op": "call", "name": "no_such_tool", "arguments": map[string]any{}})
		if e := c.next(); e.Ev != "error" || e.Code == nil || *e.Code != -32602 || !strings.Contains(e.Message, "no_such_tool") {
			t.Errorf("an unknown tool: %+v", e)
		}
	})

	// The counts above count: the calls connected to the agent, and
	// nothing ever connected to the daemon.
	if n, m := a.agent.n.Load(), a.bridge.n.Load(); n == 0 || m != 0 {
		t.Errorf("collie mcp connected %d times to the agent and %d times to the daemon; want some and none", n, m)
	}

	// Closing the client ends collie mcp, which closes its conversation.
	c.t = t
	c.send(map[string]any{"op": "close"})
	if e := c.next(); e.Ev != "closed" || strings.TrimSpace(e.Stderr) != "" {
		t.Fatalf("close: %+v", e)
	}
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("node: %v\n%s", err, c.errs.String())
	}
	for _, cv := range a.board.Snapshot().Spaces[0].Tabs[0].Conversations {
		if cv.ID != "main" && !cv.Closed {
			t.Errorf("the session's conversation %q is open after the client closed", cv.Title)
		}
	}
}
