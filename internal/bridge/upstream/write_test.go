package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func TestWrite(t *testing.T) {
	var hits atomic.Int64
	path := serveRaw(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		var req wire.SendRequest
		if r.Method != http.MethodPost || r.URL.Path != wire.SendPath || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(400)
			w.Write(wire.ErrorJSON(wire.CodeBadRequest, "bad"))
			return
		}
		if req.Text == "refuse me" {
			w.WriteHeader(http.StatusForbidden)
			w.Write(wire.ErrorJSON(wire.CodeCallerRefused, "the caller is the agent's own descendant"))
			return
		}
		json.NewEncoder(w).Encode(wire.WriteReply{RequestID: req.RequestID, Conversation: req.Conversation})
	}))
	c := NewSocket(path, os.Getuid())
	ctx := context.Background()

	reply, err := c.Write(ctx, wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hello"})
	if err != nil || reply.RequestID != "r1" || reply.Conversation != "c" {
		t.Fatalf("reply = %+v, %v", reply, err)
	}
	_, err = c.Write(ctx, wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r2"}, Conversation: "c", Text: "refuse me"})
	var ref *Refused
	if !errors.As(err, &ref) || ref.Status != 403 || ref.Code != wire.CodeCallerRefused {
		t.Fatalf("C2 refusal = %v, want *Refused 403 caller-refused", err)
	}
	before := hits.Load()
	for _, text := range []string{"", strings.Repeat("a", 32769)} {
		if _, err := c.Write(ctx, wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r3"}, Conversation: "c", Text: text}); err == nil {
			t.Errorf("X4: a send of %d bytes was accepted", len(text))
		}
	}
	if hits.Load() != before {
		t.Fatal("X4: text of 0 or 32769 bytes reached the agent; it must be refused before sending")
	}
	// Only the registry's writes go out, each to its own route: a request
	// sent to another write's route, or to a route that is no write, is
	// refused here and never reaches the agent.
	for _, path := range []string{wire.AnswerPath, wire.AskPath, "/v1/nope"} {
		if _, err := c.Write(ctx, path, &wire.SendRequest{Header: wire.Header{RequestID: "r4"}, Conversation: "c", Text: "hi"}); !errors.Is(err, wire.ErrUnknownWrite) {
			t.Errorf("a send to %s: %v, want ErrUnknownWrite", path, err)
		}
	}
	if hits.Load() != before {
		t.Fatal("a request sent to a route not its own reached the agent")
	}
}
