package durable

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// calls is an App that records which of its write methods was called.
type calls struct{ got []string }

func (c *calls) took(name, id string) (wire.WriteReply, error) {
	c.got = append(c.got, name)
	return wire.WriteReply{RequestID: id}, nil
}

func (c *calls) Answer(r *wire.AnswerRequest, _ Transport) (wire.WriteReply, error) {
	return c.took("answer", r.RequestID)
}
func (c *calls) Send(r *wire.SendRequest) (wire.WriteReply, error) {
	return c.took("send", r.RequestID)
}
func (c *calls) Abort(r *wire.AbortRequest) (wire.WriteReply, error) {
	return c.took("abort", r.RequestID)
}
func (c *calls) Action(r *wire.ActionRequest) (wire.WriteReply, error) {
	return c.took("action", r.RequestID)
}
func (c *calls) Rename(r *wire.RenameRequest) (wire.WriteReply, error) {
	return c.took("rename", r.RequestID)
}
func (c *calls) Close(r *wire.CloseRequest) (wire.WriteReply, error) {
	return c.took("close", r.RequestID)
}
func (c *calls) Reopen(r *wire.ReopenRequest) (wire.WriteReply, error) {
	return c.took("reopen", r.RequestID)
}
func (c *calls) Starter(r *wire.StarterRequest) (wire.WriteReply, error) {
	return c.took("starter", r.RequestID)
}
func (c *calls) Ask(context.Context, *wire.AskRequest, time.Duration) (wire.AskReply, error) {
	return wire.AskReply{}, errors.New("not in this test")
}
func (c *calls) Grants() wire.GrantsReply { return wire.GrantsReply{} }
func (c *calls) Revoke(*wire.RevokeRequest) (wire.RevokeReply, error) {
	return wire.RevokeReply{}, errors.New("not in this test")
}

// registryBodies is a valid body of each write of the registry. A new
// write needs one here: the test below fails without it.
var registryBodies = map[string]string{
	wire.AnswerWrite:  `{"requestId":"r-answer","conversation":"c","question":"q1","revision":1,"optionIds":["yes"]}`,
	wire.SendWrite:    `{"requestId":"r-send","conversation":"c","text":"hi"}`,
	wire.AbortWrite:   `{"requestId":"r-abort","conversation":"c"}`,
	wire.ActionWrite:  `{"requestId":"r-action","action":"deploy"}`,
	wire.RenameWrite:  `{"requestId":"r-rename","tab":"t","title":"Logs"}`,
	wire.CloseWrite:   `{"requestId":"r-close","conversation":"c"}`,
	wire.ReopenWrite:  `{"requestId":"r-reopen","conversation":"c"}`,
	wire.StarterWrite: `{"requestId":"r-starter","starter":"tests"}`,
}

// TestDispatchRegistry: the agent serves every write of the protocol's
// registry at the row's route, runs the caller check on every one (C2:
// refused here, a test server's connection is not the agent's socket),
// and hands the request to the App method of the row's write, with its
// request id; a route outside the registry is 404, and a request of a type
// the registry does not make, or under another write's name, reaches no
// App method (C2).
func TestDispatchRegistry(t *testing.T) {
	s, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	app := &calls{}
	s.SetApp(app)
	checked, unchecked := httptest.NewServer(s.handler(Transport{})), httptest.NewServer(s.handler(Transport{Unchecked: true}))
	defer checked.Close()
	defer unchecked.Close()
	post := func(base, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set(wire.VersionHeader, "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, w := range wire.Writes() {
		body, ok := registryBodies[w.Name]
		if !ok {
			t.Errorf("the write %q has no sample body in registryBodies", w.Name)
			continue
		}
		if status, reply := post(checked.URL, w.Path, body); status != http.StatusForbidden || !strings.Contains(reply, wire.CodeCallerRefused) {
			t.Errorf("C2 %s: the checked listener answered %d %s, want the caller check's refusal", w.Name, status, reply)
		}
		n := len(app.got)
		status, reply := post(unchecked.URL, w.Path, body)
		if status != 200 || !strings.Contains(reply, `"requestId":"r-`+w.Name+`"`) || len(app.got) != n+1 || app.got[n] != w.Name {
			t.Errorf("%s: %d %s; the App's calls: %v", w.Name, status, reply, app.got)
		}
	}
	for _, path := range []string{"/v1/nope", "/v1/Answer", "/v1/answer/x", wire.HelloPath} {
		if status, reply := post(unchecked.URL, path, registryBodies[wire.SendWrite]); status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d %s, want no write", path, status, reply)
		}
	}
	type wrapped struct{ *wire.SendRequest }
	n := len(app.got)
	for _, bad := range []struct {
		name string
		req  wire.WriteRequest
	}{
		{wire.SendWrite, wrapped{&wire.SendRequest{Header: wire.Header{RequestID: "w"}}}},
		{wire.AnswerWrite, &wire.SendRequest{Header: wire.Header{RequestID: "w"}}},
		{"nope", &wire.SendRequest{Header: wire.Header{RequestID: "w"}}},
	} {
		if _, err := s.dispatch(bad.name, bad.req, Transport{}); !errors.Is(err, wire.ErrUnknownWrite) || len(app.got) != n {
			t.Fatalf("a %T as the write %q: %v, App calls %v", bad.req, bad.name, err, app.got[n:])
		}
	}
}

// TestHandlersAreTheRegistry: the agent's table of handlers has a row
// for exactly the writes of the protocol's registry, so a write added to
// the registry without its handler (or a handler left for a write that is
// gone) fails here, and each row takes the request its write's row makes.
func TestHandlersAreTheRegistry(t *testing.T) {
	var names, rows []string
	for _, w := range wire.Writes() {
		names = append(names, w.Name)
		app := &calls{}
		req := w.New()
		req.Head().RequestID = "r"
		h, ok := handlers[w.Name]
		if !ok {
			continue
		}
		if _, err := h(app, req, Transport{}); err != nil || !slices.Equal(app.got, []string{w.Name}) {
			t.Errorf("%s: %v, App calls %v", w.Name, err, app.got)
		}
	}
	for name := range handlers {
		rows = append(rows, name)
	}
	sort.Strings(names)
	sort.Strings(rows)
	if !slices.Equal(rows, names) {
		t.Errorf("the agent handles the writes %v; the registry has %v", rows, names)
	}
}
