package loginapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// boards is a Boards that records the asks it was given and answers
// every one "answered yes", as a hosted board would once a device tapped.
type boards struct {
	mu   sync.Mutex
	asks map[string][]wire.AskRequest // by Identity.Agent
}

func (b *boards) Board(_ context.Context, id loginservice.Identity) (string, http.Handler, error) {
	return "raft." + id.Agent, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == wire.SnapshotPath {
			w.Write([]byte(`{"spaces":[{"id":"agent","title":"` + id.Agent + `","tabs":[]}]}`))
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != wire.AskPath {
			http.Error(w, "only ask", http.StatusTeapot)
			return
		}
		var q wire.AskRequest
		json.NewDecoder(r.Body).Decode(&q)
		b.mu.Lock()
		b.asks[id.Agent] = append(b.asks[id.Agent], q)
		b.mu.Unlock()
		json.NewEncoder(w).Encode(wire.AskReply{Question: "q1", Conversation: "asks", Status: wire.StatusAnswered, OptionIDs: []string{wire.Yes}})
	}), nil
}

type rig struct {
	t      *testing.T
	now    time.Time
	store  *loginservice.Store
	api    *API
	plat   *testPlatform
	boards *boards
}

func newRig(t *testing.T) *rig {
	r := &rig{t: t, now: time.Unix(1_800_000_000, 0), plat: newTestPlatform(t), boards: &boards{asks: map[string][]wire.AskRequest{}}}
	clock := func() time.Time { return r.now }
	s, err := loginservice.Open(loginservice.Options{Path: filepath.Join(t.TempDir(), "agent-sessions.json"), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	r.store = s
	r.api = New(Options{Store: s, Platform: NewPlatform(r.plat.pub, clock), Boards: r.boards, Base: func() string { return "https://bridge.example" }})
	return r
}

func (r *rig) do(method, path, body string, hdr map[string]string) (int, http.Header, string) {
	r.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.api.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Header(), string(b)
}

// login runs the whole flow for the platform's agent-7 with verifier v:
// the action (with the platform's assertion), then the exchange.
func (r *rig) login(v string) (grant string, sess map[string]any) {
	r.t.Helper()
	ch := loginwire.Challenge(v)
	body := `{"schema":"raft-cli-agent-login-request.v1","code_challenge":"` + ch + `","code_challenge_method":"S256"}`
	status, _, out := r.do("POST", loginwire.LoginActionPath, body, map[string]string{AssertionHeader: r.plat.sign("", r.plat.claims(r.now, ch))})
	if status != 200 {
		r.t.Fatalf("agent-login action: %d %s", status, out)
	}
	var g map[string]string
	if err := json.Unmarshal([]byte(out), &g); err != nil || g["schema"] != loginwire.SchemaGrant || g["service"] != "collie" || len(g) != 4 {
		r.t.Fatalf("grant reply: %v %s", err, out)
	}
	status, _, out = r.do("POST", loginwire.ExchangePath, `{"schema":"raft-cli-agent-login-exchange.v1","grant":"`+g["grant"]+`","code_verifier":"`+v+`"}`, nil)
	if status != 200 {
		r.t.Fatalf("exchange: %d %s", status, out)
	}
	json.Unmarshal([]byte(out), &sess)
	return g["grant"], sess
}

var verifier = strings.Repeat("v", 43)

// TestLoginFlow_R5_R8: the action issues a grant only to the platform's
// proven agent and for the challenge the assertion names; the exchange
// returns exactly the six session keys; whoami says who the grant
// recorded; ask reaches the agent's own board; refresh rotates; revoke
// ends the chain.
func TestLoginFlow_R5_R8(t *testing.T) {
	r := newRig(t)
	grant, sess := r.login(verifier)
	if len(sess) != 6 || sess["schema"] != loginwire.SchemaSession || sess["token_type"] != "Bearer" {
		t.Fatalf("session reply: %v", sess)
	}
	access := sess["access_token"].(string)
	bearer := map[string]string{"Authorization": "Bearer " + access}

	status, _, out := r.do("GET", loginwire.WhoamiPath, "", bearer)
	var who map[string]string
	json.Unmarshal([]byte(out), &who)
	if status != 200 || who["agent_id"] != "agent-7" || who["server"] != "srv-1" || who["app"] != "app-1" {
		t.Fatalf("whoami: %d %s", status, out)
	}
	status, _, out = r.do("POST", loginwire.AskPath, `{"requestId":"r1","kind":"yes-no","title":"Deploy?"}`, bearer)
	if status != 200 || !strings.Contains(out, `"status":"answered"`) || len(r.boards.asks["agent-7"]) != 1 {
		t.Fatalf("ask: %d %s (%v)", status, out, r.boards.asks)
	}
	// It reads its own board, and only its own.
	status, _, out = r.do("GET", loginwire.QuestionsPath, "", bearer)
	if status != 200 || !strings.Contains(out, `"title":"agent-7"`) {
		t.Fatalf("questions: %d %s", status, out)
	}
	if status, _, _ := r.do("GET", loginwire.QuestionsPath, "", nil); status != 401 {
		t.Fatalf("questions without a token: %d", status)
	}
	// The grant was used once.
	status, _, out = r.do("POST", loginwire.ExchangePath, `{"schema":"raft-cli-agent-login-exchange.v1","grant":"`+grant+`","code_verifier":"`+verifier+`"}`, nil)
	if status == 200 || refusalCode(t, out) != loginwire.CodeConsumed {
		t.Fatalf("a second exchange: %d %s", status, out)
	}
	// Refresh rotates both tokens; the old access token stops working.
	status, _, out = r.do("POST", loginwire.RefreshPath, `{"schema":"raft-cli-agent-refresh.v1","refresh_token":"`+sess["refresh_token"].(string)+`"}`, nil)
	var rot map[string]any
	json.Unmarshal([]byte(out), &rot)
	if status != 200 || rot["access_token"] == access || rot["refresh_token"] == sess["refresh_token"] {
		t.Fatalf("refresh: %d %s", status, out)
	}
	if status, h, _ := r.do("GET", loginwire.WhoamiPath, "", bearer); status != 401 || h.Get("WWW-Authenticate") != `Bearer error="invalid_token"` {
		t.Fatalf("the rotated-away access token: %d %v", status, h)
	}
	// Logout's revoke: the chain ends.
	status, _, _ = r.do("POST", loginwire.RevokePath, `{"schema":"raft-cli-agent-revoke.v1","refresh_token":"`+rot["refresh_token"].(string)+`"}`, map[string]string{"Authorization": "Bearer " + rot["access_token"].(string)})
	if status != 204 {
		t.Fatalf("revoke: %d", status)
	}
	if status, _, _ := r.do("POST", loginwire.AskPath, `{"requestId":"r2","kind":"yes-no","title":"Again?"}`, map[string]string{"Authorization": "Bearer " + rot["access_token"].(string)}); status != 401 {
		t.Fatalf("ask after revoke: %d", status)
	}
	// An unknown token to revoke is no error (RFC 7009).
	if status, _, _ := r.do("POST", loginwire.RevokePath, `{"schema":"raft-cli-agent-revoke.v1","refresh_token":"collie_r_nothing"}`, nil); status != 204 {
		t.Fatalf("revoke of an unknown token: %d", status)
	}
}

// TestActionRefusals_R5: no grant without the platform's assertion, for
// a challenge other than the one it signed, or for a body outside the
// schema; each refusal is from the closed set and names no credential.
func TestActionRefusals_R5(t *testing.T) {
	r := newRig(t)
	ch := loginwire.Challenge(verifier)
	good := `{"schema":"raft-cli-agent-login-request.v1","code_challenge":"` + ch + `","code_challenge_method":"S256"}`
	other := loginwire.Challenge(strings.Repeat("w", 43))
	tests := []struct {
		name, body, assertion string
		status                int
		code                  string
	}{
		{"no assertion", good, "", 401, loginwire.CodeInvalid},
		{"another platform's", good, newTestPlatform(t).sign("", r.plat.claims(r.now, ch)), 401, loginwire.CodeInvalid},
		{"signed for another challenge", good, r.plat.sign("", r.plat.claims(r.now, other)), 400, loginwire.CodeBindingMismatch},
		{"unknown member", strings.Replace(good, `"schema"`, `"agent":"x","schema"`, 1), r.plat.sign("", r.plat.claims(r.now, ch)), 400, loginwire.CodeInvalid},
		{"plain method", strings.Replace(good, "S256", "plain", 1), r.plat.sign("", r.plat.claims(r.now, ch)), 400, loginwire.CodeInvalid},
		{"other schema", strings.Replace(good, "request.v1", "request.v2", 1), r.plat.sign("", r.plat.claims(r.now, ch)), 400, loginwire.CodeInvalid},
		{"huge body", `{"schema":"` + strings.Repeat("a", 20000) + `"}`, r.plat.sign("", r.plat.claims(r.now, ch)), 413, loginwire.CodeInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tt.assertion != "" {
				hdr[AssertionHeader] = tt.assertion
			}
			status, _, out := r.do("POST", loginwire.LoginActionPath, tt.body, hdr)
			code := refusalCode(t, out)
			if status != tt.status || code != tt.code || !loginwire.KnownCode(code) {
				t.Fatalf("%d %s, want %d %s", status, out, tt.status, tt.code)
			}
		})
	}
	// Agent login off: the action says so; sessions made before work on.
	_, sess := r.login(verifier)
	off := New(Options{Store: r.store, PlatformOff: "its user has not set platform_key_file", Boards: r.boards, Base: func() string { return "https://b" }})
	req := httptest.NewRequest("POST", loginwire.LoginActionPath, strings.NewReader(good))
	w := httptest.NewRecorder()
	off.ServeHTTP(w, req)
	if w.Code != 503 || !strings.Contains(w.Body.String(), "platform_key_file") {
		t.Fatalf("action with agent login off: %d %s", w.Code, w.Body)
	}
	req = httptest.NewRequest("GET", loginwire.WhoamiPath, nil)
	req.Header.Set("Authorization", "Bearer "+sess["access_token"].(string))
	w = httptest.NewRecorder()
	off.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Fatalf("whoami with agent login off: %d", w.Code)
	}
}

// TestExchangeRefusals_R13: an intercepted grant without its verifier
// makes no session; a wrong verifier does not spend the grant; an
// expired grant is refused; bodies outside the schema are refused.
func TestExchangeRefusals_R13(t *testing.T) {
	r := newRig(t)
	ch := loginwire.Challenge(verifier)
	body := `{"schema":"raft-cli-agent-login-request.v1","code_challenge":"` + ch + `","code_challenge_method":"S256"}`
	_, _, out := r.do("POST", loginwire.LoginActionPath, body, map[string]string{AssertionHeader: r.plat.sign("", r.plat.claims(r.now, ch))})
	var g map[string]string
	json.Unmarshal([]byte(out), &g)
	exchange := func(grant, v string) (int, string) {
		status, _, out := r.do("POST", loginwire.ExchangePath, `{"schema":"raft-cli-agent-login-exchange.v1","grant":"`+grant+`","code_verifier":"`+v+`"}`, nil)
		return status, refusalCode(t, out)
	}
	if status, code := exchange(g["grant"], strings.Repeat("x", 43)); status != 400 || code != loginwire.CodeGrantProofMismatch {
		t.Fatalf("a thief's verifier: %d %s", status, code)
	}
	if status, code := exchange(g["grant"], "short"); status != 400 || code != loginwire.CodeInvalid {
		t.Fatalf("a malformed verifier: %d %s", status, code)
	}
	if status, code := exchange("collie_g_unknown", verifier); status != 400 || code != loginwire.CodeInvalid {
		t.Fatalf("an unknown grant: %d %s", status, code)
	}
	r.now = r.now.Add(loginwire.GrantTTL)
	if status, code := exchange(g["grant"], verifier); status != 409 || code != loginwire.CodeExpired {
		t.Fatalf("the grant at 300 s: %d %s", status, code)
	}
	if status, _, _ := r.do("POST", loginwire.ExchangePath, `{"schema":"raft-cli-agent-login-exchange.v1","grant":"g","code_verifier":"v","agent_id":"root"}`, nil); status != 400 {
		t.Fatalf("an exchange that declares an identity: %d", status)
	}
}

// TestManifest_R11: the manifest names the two actions and the credential
// boundary, migration-help the commands; both are no-store.
func TestManifest_R11(t *testing.T) {
	r := newRig(t)
	status, h, out := r.do("GET", loginwire.ManifestPath, "", nil)
	var m struct {
		Schema      string            `json:"schema"`
		Service     string            `json:"service"`
		Execution   map[string]string `json:"execution"`
		Credentials map[string]string `json:"credentials"`
		Actions     []struct {
			Name     string `json:"name"`
			Endpoint struct{ Method, Path string }
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil || status != 200 || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("manifest: %d %v %s", status, err, out)
	}
	if m.Schema != "raft-agent-manifest.v0" || m.Service != "collie" || m.Execution["base_url"] != "https://bridge.example" ||
		m.Credentials["boundary"] != "agent_home" || m.Credentials["user_home"] != "forbidden" || len(m.Actions) != 2 ||
		m.Actions[0].Name != "agent-login" || m.Actions[0].Endpoint.Path != loginwire.LoginActionPath || m.Actions[1].Name != "migration-help" {
		t.Fatalf("manifest: %+v", m)
	}
	status, _, out = r.do("GET", loginwire.MigrationHelpPath, "", nil)
	if status != 200 || !strings.Contains(out, "collie login --url https://bridge.example") || !strings.Contains(out, `"deprecated_actions":[]`) {
		t.Fatalf("migration-help: %d %s", status, out)
	}
}

// refusalCode is the code of a refusal, which must be in the agent
// surface's one shape (loginwire.ErrorBody, closed) with a message.
func refusalCode(t *testing.T, out string) string {
	t.Helper()
	var e loginwire.ErrorBody
	if err := jsonstrict.Unmarshal([]byte(out), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a refusal in the agent surface's shape (%v): %s", err, out)
	}
	return e.Error.Code
}
