package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestEveryToolEveryEnd_D1: every asking tool, approve included, ends the
// same way when no answer comes: timed out (denied by default), withdrawn
// on a device, or cancelled by the client, which withdraws the question
// from the agent's snapshot at once. The ask tools say so in a tool error;
// approve in a deny.
func TestEveryToolEveryEnd_D1(t *testing.T) {
	tools := map[string]any{
		"ask_yes_no": map[string]any{"question": "Q?", "timeout": 40},
		"ask_choice": map[string]any{"question": "Q?", "options": []string{"a", "b"}, "timeout": 40},
		"ask_text":   map[string]any{"question": "Q?", "timeout": 40},
		"ask_form":   map[string]any{"question": "Q?", "fields": []map[string]string{{"name": "x"}}, "timeout": 40},
		"approve":    json.RawMessage(`{"tool_name":"Bash","input":{"command":"make"},"tool_use_id":"toolu_9"}`),
	}
	for tool, args := range tools {
		for _, end := range []string{"timed_out", "withdrawn", "cancelled"} {
			t.Run(tool+"/"+end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newRig(t, Config{Timeout: 40 * time.Second})
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					ch := r.call(ctx, tool, args, nil)
					synctest.Wait()
					cv, q := r.only()
					want := "no answer from the user within 40s; denied by default"
					switch end {
					case "timed_out":
						time.Sleep(40 * time.Second)
					case "withdrawn":
						r.post(wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab"}, Conversation: cv, Question: q.ID})
						want = "the question was withdrawn"
					case "cancelled":
						start := time.Now()
						cancel()
						if cr := <-ch; !errors.Is(cr.err, context.Canceled) {
							t.Fatalf("the cancelled call returned %+v", cr)
						}
						synctest.Wait()
						if open := r.open(); len(open) != 0 || time.Since(start) != 0 {
							t.Fatalf("%s after the cancel the question is still open: %+v", time.Since(start), open)
						}
						return
					}
					res, _, text := r.result(ch)
					if tool == "approve" {
						if res.IsError || !strings.HasPrefix(text, `{"behavior":"deny","message":"Collie denies the tool call: `+want) {
							t.Fatalf("approve: %s", text)
						}
					} else if !res.IsError || !strings.HasPrefix(text, want) {
						t.Fatalf("%s: %q (error %v), want a tool error %q", tool, text, res.IsError, want)
					}
					if open := r.open(); len(open) != 0 {
						t.Fatalf("still open: %+v", open)
					}
				})
			})
		}
	}
}
