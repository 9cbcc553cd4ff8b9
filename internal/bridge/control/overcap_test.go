package control

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// agentsBackend is a revokeBackend that also keeps agent sessions, so the
// control socket serves their routes.
type agentsBackend struct{ revokeBackend }

func (agentsBackend) AgentSessions() ([]AgentSession, error)    { return nil, nil }
func (agentsBackend) RevokeAgentSession(id string) (int, error) { return 0, nil }

// TestEveryBodyOverCapIs413: every control route that reads a body (a
// device's revoke, an agent session's) refuses one over its cap with 413
// and a sentence saying so, whether its length is given or not, and
// revokes nothing; it used to answer 400 as if the body were malformed.
func TestEveryBodyOverCapIs413(t *testing.T) {
	path := privateSocket(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := Listen(path, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := agentsBackend{revokeBackend{revoked: make(chan string, 4)}}
	go Serve(ctx, l, b, log)
	c := NewClient(path)
	body := `{"id":"` + strings.Repeat("d", idBodyCap) + `"}`
	for _, route := range []string{revokePath, agentRevokePath} {
		for _, known := range []bool{true, false} {
			var rd io.Reader = strings.NewReader(body)
			if !known {
				rd = io.MultiReader(rd)
			}
			req, _ := http.NewRequestWithContext(ctx, "POST", "http://collie"+route, rd)
			resp, err := c.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			reply, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(reply), "send less") {
				t.Errorf("POST %s, %d bytes (length given %v): %d %s; want 413", route, len(body), known, resp.StatusCode, reply)
			}
		}
	}
	if len(b.revoked) != 0 {
		t.Fatal("a body over its cap revoked a device")
	}
}
