package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMalformedArguments: arguments that do not fit a tool's schema, or
// that no card could show, get a tool error that names the problem; the
// server asks nothing and serves the next call.
func TestMalformedArguments(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for _, tt := range []struct {
		name string
		tool string
		args any
		want string
	}{
		{"question_not_string", "ask_yes_no", map[string]any{"question": 5}, "question"},
		{"no_question", "ask_yes_no", map[string]any{"details": "x"}, "question"},
		{"unknown_argument", "ask_yes_no", map[string]any{"question": "Q?", "urgent": true}, "urgent"},
		{"timeout_negative", "ask_yes_no", map[string]any{"question": "Q?", "timeout": -1}, "timeout"},
		{"timeout_over_cap", "ask_text", map[string]any{"question": "Q?", "timeout": 86400}, "timeout"},
		{"blank_question", "ask_yes_no", map[string]any{"question": "\u200b\u202e "}, "the question is empty"},
		{"one_option", "ask_choice", map[string]any{"question": "Q?", "options": []string{"a"}}, "options"},
		{"same_option_twice", "ask_choice", map[string]any{"question": "Q?", "options": []string{"a", "a"}}, "used twice"},
		{"blank_option", "ask_choice", map[string]any{"question": "Q?", "options": []string{"a", "\u200b"}}, "an option is empty"},
		{"field_bad_name", "ask_form", map[string]any{"question": "Q?", "fields": []map[string]string{{"name": "a b"}}}, "name"},
		{"field_twice", "ask_form", map[string]any{"question": "Q?", "fields": []map[string]string{{"name": "a"}, {"name": "a"}}}, "used twice"},
		{"no_fields", "ask_form", map[string]any{"question": "Q?", "fields": []any{}}, "fields"},
		{"empty_message", "notify", map[string]any{"message": ""}, "message"},
		{"one_megabyte_question", "ask_yes_no", map[string]any{"question": big}, "the arguments are 1048591 bytes; the limit is 262144"},
		{"one_megabyte_message", "notify", map[string]any{"message": big}, "the limit is 262144"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{})
				res, _, text := r.result(r.call(t.Context(), tt.tool, tt.args, nil))
				if !res.IsError || !strings.Contains(text, tt.want) || len(text) > 4096 {
					t.Fatalf("result %.500q (error %v), want a tool error naming %q", text, res.IsError, tt.want)
				}
				if len(r.open()) != 0 {
					t.Fatal("a malformed call asked a question")
				}
				if _, err := r.cs.ListTools(t.Context(), nil); err != nil {
					t.Fatalf("the server stopped serving: %v", err)
				}
			})
		})
	}
}

// TestGarbageOnTheWire: malformed requests (arguments not an object, an
// unknown tool, params not an object) get errors and the session goes on.
func TestGarbageOnTheWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := New(Config{Agent: &http.Client{}})
		c1, c2 := net.Pipe()
		done := make(chan error, 1)
		go func() { done <- srv.Serve(t.Context(), &mcp.IOTransport{Reader: c1, Writer: c1}) }()
		in := bufio.NewReader(c2)
		send := func(line string) {
			if _, err := io.WriteString(c2, line+"\n"); err != nil {
				select {
				case err := <-done:
					t.Fatalf("the server ended: %v", err)
				default:
				}
				t.Fatal(err)
			}
		}
		read := func() map[string]any {
			line, err := in.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return m
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
		if m := read(); m["result"] == nil {
			t.Fatalf("initialize: %v", m)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_yes_no","arguments":"not an object"}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":[1,2]}`,
		} {
			send(line)
			if m := read(); m["error"] == nil && m["result"] == nil {
				t.Fatalf("%s: %v", line, m)
			}
		}
		send(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
		if m := read(); m["id"] != float64(5) || m["result"] == nil {
			t.Fatalf("tools/list after malformed calls: %v", m)
		}
		// A line that is not JSON cannot be skipped in a JSON stream: the
		// session ends with an error that says so, no panic, no hang.
		send(`{{{ not json`)
		if err := <-done; err == nil || !strings.Contains(err.Error(), "invalid character") {
			t.Fatalf("Serve after a broken line: %v", err)
		}
		c2.Close()
	})
}
