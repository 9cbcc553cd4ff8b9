package loginapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/login/loginwire/loginwiretest"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// brokenBoards cannot give a board.
type brokenBoards struct{}

func (brokenBoards) Board(context.Context, loginservice.Identity) (string, http.Handler, error) {
	return "", nil, errors.New("no board")
}

// TestEveryRefusalAsDocumented_R9: every refusal path of the service, and
// of the agent's board behind ask, answers in the one shape
// docs/agent-login.md states, with a code it lists for that status (a 401
// with the bearer challenge).
func TestEveryRefusalAsDocumented_R9(t *testing.T) {
	doc := loginwiretest.DocRefusals(t)
	r := newRig(t)
	host := loginhost.New(loginhost.Options{Attach: func(string, upstream.Waiter) error { return nil }})
	defer host.Close()
	r.api.o.Boards = host
	ch := loginwire.Challenge(verifier)
	action := `{"schema":"raft-cli-agent-login-request.v1","code_challenge":"` + ch + `","code_challenge_method":"S256"}`
	assertion := func() map[string]string {
		return map[string]string{AssertionHeader: r.plat.sign("", r.plat.claims(r.now, ch))}
	}
	exchange := func(grant, v string) string {
		return `{"schema":"raft-cli-agent-login-exchange.v1","grant":"` + grant + `","code_verifier":"` + v + `"}`
	}
	grant := func() string {
		_, _, out := r.do("POST", loginwire.LoginActionPath, action, assertion())
		var g map[string]string
		json.Unmarshal([]byte(out), &g)
		return g["grant"]
	}
	used := grant()
	r.do("POST", loginwire.ExchangePath, exchange(used, verifier), nil)
	_, sess := r.login(verifier) // replaces the session the used grant made
	bearer := map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)}

	type step struct {
		name               string
		method, path, body string
		hdr                map[string]string
		before             func()
		status             int
		code               string
		api                *API // nil: r.api
	}
	off := New(Options{Store: r.store, PlatformOff: "its user has not set platform_key_file", Boards: r.boards, Base: func() string { return "https://b" }})
	steps := []step{
		{name: "agent login off", method: "POST", path: loginwire.LoginActionPath, body: action, api: off, status: 503, code: loginwire.CodeTemporarilyUnavailable},
		{name: "no assertion", method: "POST", path: loginwire.LoginActionPath, body: action, status: 401, code: loginwire.CodeInvalid},
		{name: "action body not JSON", method: "POST", path: loginwire.LoginActionPath, body: "{", hdr: assertion(), status: 400, code: loginwire.CodeInvalid},
		{name: "action body too large", method: "POST", path: loginwire.LoginActionPath, body: `{"schema":"` + strings.Repeat("a", 20000) + `"}`, hdr: assertion(), status: 413, code: loginwire.CodeInvalid},
		{name: "challenge not the assertion's", method: "POST", path: loginwire.LoginActionPath, body: strings.Replace(action, ch, loginwire.Challenge(strings.Repeat("w", 43)), 1), hdr: assertion(), status: 400, code: loginwire.CodeBindingMismatch},
		{name: "too many logins waiting", method: "POST", path: loginwire.LoginActionPath, body: action, hdr: assertion(), status: 503, code: loginwire.CodeTemporarilyUnavailable,
			before: func() {
				for range 16 {
					grant()
				}
			}},
		{name: "wrong verifier", method: "POST", path: loginwire.ExchangePath, body: exchange(grant(), strings.Repeat("x", 43)), status: 400, code: loginwire.CodeGrantProofMismatch},
		{name: "unknown grant", method: "POST", path: loginwire.ExchangePath, body: exchange("collie_g_unknown", verifier), status: 400, code: loginwire.CodeInvalid},
		{name: "grant used", method: "POST", path: loginwire.ExchangePath, body: exchange(used, verifier), status: 409, code: loginwire.CodeConsumed},
		{name: "unknown refresh token", method: "POST", path: loginwire.RefreshPath, body: `{"schema":"raft-cli-agent-refresh.v1","refresh_token":"collie_r_x"}`, status: 400, code: loginwire.CodeInvalid},
		{name: "revoke outside its schema", method: "POST", path: loginwire.RevokePath, body: `{"schema":"x","refresh_token":""}`, status: 400, code: loginwire.CodeInvalid},
		{name: "no access token", method: "GET", path: loginwire.WhoamiPath, status: 401, code: loginwire.CodeInvalid},
		{name: "a bare access token", method: "GET", path: loginwire.QuestionsPath, hdr: map[string]string{"Authorization": sess["access_token"].(string)}, status: 401, code: loginwire.CodeInvalid},
		{name: "ask not an ask", method: "POST", path: loginwire.AskPath, body: `{"title":`, hdr: bearer, status: 400, code: "bad-request"},
		{name: "ask too large", method: "POST", path: loginwire.AskPath, body: `{"title":"` + strings.Repeat("a", wire.AskCap) + `"}`, hdr: bearer, status: 413, code: "body-too-large"},
		{name: "board unreachable", method: "POST", path: loginwire.AskPath, body: `{"title":"q"}`, hdr: bearer, status: 503, code: loginwire.CodeTemporarilyUnavailable,
			api: New(Options{Store: r.store, Boards: brokenBoards{}, Base: func() string { return "https://b" }})},
		{name: "no such path", method: "GET", path: loginwire.AgentAPIPrefix + "/v1/nothing", status: 404, code: loginwire.CodeNotFound},
		{name: "no such token path", method: "POST", path: "/api/auth/agent/nothing", status: 404, code: loginwire.CodeNotFound},
		{name: "another method", method: "GET", path: loginwire.ExchangePath, status: 405, code: loginwire.CodeMethodNotAllowed},
		{name: "another method on a read", method: "POST", path: loginwire.WhoamiPath, status: 405, code: loginwire.CodeMethodNotAllowed},
		{name: "grant expired", method: "POST", path: loginwire.ExchangePath, status: 409, code: loginwire.CodeExpired,
			before: func() {}},
	}
	late := grant // the last step's grant, made before the clock moves
	steps[len(steps)-1].body = exchange(late(), verifier)
	steps[len(steps)-1].before = func() { r.now = r.now.Add(loginwire.GrantTTL + time.Second) }
	steps = append(steps,
		step{name: "access token expired", method: "GET", path: loginwire.WhoamiPath, hdr: bearer, status: 401, code: loginwire.CodeExpired,
			before: func() { r.now = r.now.Add(loginwire.AccessTTL) }},
		step{name: "refresh token expired", method: "POST", path: loginwire.RefreshPath, body: `{"schema":"raft-cli-agent-refresh.v1","refresh_token":"` + sess["refresh_token"].(string) + `"}`,
			before: func() { r.now = r.now.Add(loginwire.RefreshTTL) }, status: 409, code: loginwire.CodeExpired},
	)
	seen := map[string]bool{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before()
			}
			api := s.api
			if api == nil {
				api = r.api
			}
			req := httptest.NewRequest(s.method, s.path, strings.NewReader(s.body))
			for k, v := range s.hdr {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			code := loginwiretest.CheckRefusal(t, doc, w.Code, w.Header(), w.Body.String())
			if w.Code != s.status || code != s.code {
				t.Fatalf("%d %s, want %d %s", w.Code, w.Body, s.status, s.code)
			}
			seen[code] = true
		})
	}
	// Every code the doc gives the service or a board is one of these
	// paths (the listener's are the device API's test).
	for _, c := range []string{loginwire.CodeInvalid, loginwire.CodeExpired, loginwire.CodeConsumed, loginwire.CodeBindingMismatch,
		loginwire.CodeGrantProofMismatch, loginwire.CodeTemporarilyUnavailable, loginwire.CodeNotFound, loginwire.CodeMethodNotAllowed, "bad-request", "body-too-large"} {
		if !seen[c] {
			t.Errorf("no refusal path gave %s", c)
		}
	}
}
