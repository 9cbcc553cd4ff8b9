//go:build linux

package agentclients

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/fakemodel"
)

// ocEvent is one event of opencode serve's GET /event stream.
type ocEvent struct {
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// postJSON posts body to url and decodes the reply into out (may be nil).
func postJSON(t *testing.T, ctx context.Context, url, body string, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", url, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
	}
}

// TestOpenCode_ServePermissionReply records how `opencode serve` 1.18 asks
// for a permission ("bash": "ask") and takes the answer: a
// permission.asked event on GET /event with the request's id, the
// command, and the pattern "always" would grant; POST
// /permission/ID/reply {"reply": "once"} runs the tool; {"reply":
// "reject"} does not, and ends the session's turn without calling the
// model again.
func TestOpenCode_ServePermissionReply(t *testing.T) {
	Require(t, OpenCode)
	for _, reply := range []string{"once", "reject"} {
		t.Run(reply, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*clientTimeout)
			defer cancel()
			k := newHookKit(t)
			mark := filepath.Join(k.Project, "MARK")
			api := fakemodel.Start(markScript("bash", "command", mark, map[string]any{"description": "make a mark"}))
			defer api.Close()
			if err := k.WriteFile(k.OpenCodeConfigPath(), OpenCodeConfig(api.URL, map[string]any{"bash": "ask"}), 0o644); err != nil {
				t.Fatal(err)
			}
			srv, err := k.StartOpenCodeServe(ctx, t, api.URL)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/event", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			events := make(chan ocEvent, 64)
			go func() {
				defer close(events)
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						var e ocEvent
						if json.Unmarshal([]byte(d), &e) == nil {
							events <- e
						}
					}
				}
			}()
			next := func(typ string) json.RawMessage {
				t.Helper()
				for e := range events {
					if e.Type == typ {
						return e.Properties
					}
				}
				t.Fatalf("the event stream ended before %s", typ)
				return nil
			}
			var session struct {
				ID string `json:"id"`
			}
			postJSON(t, ctx, srv.URL+"/session", `{}`, &session)
			postJSON(t, ctx, srv.URL+"/session/"+session.ID+"/prompt_async",
				`{"parts":[{"type":"text","text":"make a mark"}]}`, nil)
			var asked struct {
				ID         string            `json:"id"`
				SessionID  string            `json:"sessionID"`
				Permission string            `json:"permission"`
				Patterns   []string          `json:"patterns"`
				Metadata   map[string]string `json:"metadata"`
				Always     []string          `json:"always"`
				Tool       struct {
					CallID string `json:"callID"`
				} `json:"tool"`
			}
			if err := json.Unmarshal(next("permission.asked"), &asked); err != nil {
				t.Fatal(err)
			}
			command := "echo ran > " + mark
			if asked.SessionID != session.ID || asked.Permission != "bash" || asked.Metadata["command"] != command ||
				len(asked.Patterns) != 1 || asked.Patterns[0] != command || asked.Tool.CallID == "" {
				t.Errorf("permission.asked: %+v", asked)
			}
			if len(asked.Always) != 1 || asked.Always[0] != "echo *" {
				t.Errorf(`"always" would grant %q, want ["echo *"]`, asked.Always)
			}
			var ok bool
			postJSON(t, ctx, srv.URL+"/permission/"+asked.ID+"/reply", `{"reply":"`+reply+`"}`, &ok)
			if !ok {
				t.Error("the reply was not taken")
			}
			var replied struct {
				RequestID string `json:"requestID"`
				Reply     string `json:"reply"`
			}
			if err := json.Unmarshal(next("permission.replied"), &replied); err != nil {
				t.Fatal(err)
			}
			if replied.RequestID != asked.ID || replied.Reply != reply {
				t.Errorf("permission.replied: %+v", replied)
			}
			next("session.idle")
			_, statErr := os.Stat(mark)
			if ran := statErr == nil; ran != (reply == "once") {
				t.Errorf("the tool ran: %v after the reply %q", ran, reply)
			}
			if reply == "once" {
				if tr := loopResult(t, api); tr.IsError {
					t.Errorf("the tool's result is an error: %+v", tr)
				}
			}
			if reply == "reject" {
				// The session stops there: the model is not called again.
				if n := len(api.TurnRequests()); n != 1 {
					t.Errorf("after reject, %d requests of the agent loop, want 1", n)
				}
			}
		})
	}
}
