package loginclient

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// bridge is a test double of the bridge's token endpoints and agent API,
// as the contract between the two halves of agent login describes them
// (docs/agent-login.md): exchange checks the verifier against the
// challenge the raft double recorded, refresh rotates both tokens and a
// reused refresh token revokes the chain, the agent API answers 401 to an
// unknown or expired access token.
type bridge struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	grants     map[string]string // grant -> challenge, single use
	access     map[string]time.Time
	refresh    map[string]bool // current refresh tokens; false: rotated away
	accessTTL  time.Duration
	refreshes  int
	exchanges  int
	revokes    int
	asks       int
	askTokens  []string
	secrets    []string // every credential issued or received, for the scans
	override   map[string]http.HandlerFunc
	failAccess map[string]bool // access tokens the agent API answers 401 to once
	// argsFile is where the raft double records its arguments; a grant
	// registered with the challenge fromArgs is bound, at exchange, to the
	// challenge the CLI passed to raft there.
	argsFile string
}

const fromArgs = "challenge-from-raft-args"

// raftChallenge is the code_challenge the CLI passed to the raft double.
func raftChallenge(argsFile string) string {
	data, err := os.ReadFile(argsFile)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var req struct {
		CodeChallenge string `json:"code_challenge"`
	}
	if len(lines) == 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &req) != nil {
		return ""
	}
	return req.CodeChallenge
}

func newBridge(t *testing.T) *bridge {
	b := &bridge{t: t, grants: map[string]string{}, access: map[string]time.Time{}, refresh: map[string]bool{},
		accessTTL: 15 * time.Minute, override: map[string]http.HandlerFunc{}, failAccess: map[string]bool{}}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

// newTLSBridge is the double over TLS with cert, at https://127.0.0.1:PORT.
func newTLSBridge(t *testing.T, cert tls.Certificate) *bridge {
	b := &bridge{t: t, grants: map[string]string{}, access: map[string]time.Time{}, refresh: map[string]bool{},
		accessTTL: 15 * time.Minute, override: map[string]http.HandlerFunc{}, failAccess: map[string]bool{}}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bridge) url() string { return b.srv.URL }

func token(prefix string) string {
	var r [16]byte
	rand.Read(r[:])
	return prefix + "-" + hex.EncodeToString(r[:])
}

// grant registers a grant for challenge, as the agent-login action would.
func (b *bridge) grant(challenge string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	g := token("GRANT")
	b.grants[g] = challenge
	b.secrets = append(b.secrets, g)
	return g
}

// mint is a new session: both tokens registered.
func (b *bridge) mint(now time.Time) map[string]any {
	a, r := token("ACCESS"), token("REFRESH")
	b.access[a] = now.Add(b.accessTTL)
	b.refresh[r] = true
	b.secrets = append(b.secrets, a, r)
	return map[string]any{"schema": loginstore.Schema, "token_type": "Bearer", "access_token": a,
		"access_expires_at": now.Add(b.accessTTL).UTC().Format(time.RFC3339), "refresh_token": r,
		"refresh_expires_at": now.Add(24 * time.Hour).UTC().Format(time.RFC3339)}
}

// seed stores a session in e as a login would have, with the access
// token expiring at accessExp.
func (b *bridge) seed(e loginstore.Env, accessExp time.Time) loginstore.Record {
	b.mu.Lock()
	m := b.mint(time.Now())
	b.access[m["access_token"].(string)] = accessExp
	b.mu.Unlock()
	s := loginstore.Session{Schema: loginstore.Schema, TokenType: "Bearer", AccessToken: m["access_token"].(string),
		AccessExpiresAt: accessExp.UTC().Format(time.RFC3339), RefreshToken: m["refresh_token"].(string)}
	if _, err := loginstore.Write(e, Service, s, b.url(), time.Now()); err != nil {
		b.t.Fatal(err)
	}
	rec, _ := loginstore.Read(e, Service)
	return rec
}

func (b *bridge) counts() (exchanges, refreshes, asks int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exchanges, b.refreshes, b.asks
}

func (b *bridge) fail(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":"refused %s"}}`, code, strings.Repeat("x", 3))
}

func (b *bridge) serve(w http.ResponseWriter, r *http.Request) {
	if h, ok := b.override[r.URL.Path]; ok {
		h(w, r)
		return
	}
	var body []byte
	if r.Body != nil {
		body = make([]byte, 0, 512)
		buf := make([]byte, 512)
		for {
			n, err := r.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	switch r.URL.Path {
	case ExchangePath:
		var req struct{ Schema, Grant, CodeVerifier string }
		req2 := struct {
			Schema       *string `json:"schema"`
			Grant        *string `json:"grant"`
			CodeVerifier *string `json:"code_verifier"`
		}{}
		if jsonstrict.Unmarshal(body, &req2) != nil || req2.Schema == nil || req2.Grant == nil || req2.CodeVerifier == nil || *req2.Schema != SchemaExchange {
			b.fail(w, 400, "invalid")
			return
		}
		req.Grant, req.CodeVerifier = *req2.Grant, *req2.CodeVerifier
		b.secrets = append(b.secrets, req.CodeVerifier)
		b.exchanges++
		ch, ok := b.grants[req.Grant]
		delete(b.grants, req.Grant)
		if ch == fromArgs {
			ch = raftChallenge(b.argsFile)
		}
		switch {
		case !ok:
			b.fail(w, 400, "consumed")
		case Challenge(req.CodeVerifier) != ch:
			b.fail(w, 400, "grant_proof_mismatch")
		default:
			json.NewEncoder(w).Encode(b.mint(now))
		}
	case RefreshPath:
		var req struct {
			Schema       string `json:"schema"`
			RefreshToken string `json:"refresh_token"`
		}
		if jsonstrict.Unmarshal(body, &req) != nil || req.Schema != SchemaRefresh {
			b.fail(w, 400, "invalid")
			return
		}
		b.refreshes++
		current, known := b.refresh[req.RefreshToken]
		switch {
		case !known:
			b.fail(w, 401, "invalid")
		case !current: // reuse: the whole chain goes
			for k := range b.refresh {
				b.refresh[k] = false
			}
			b.access = map[string]time.Time{}
			b.fail(w, 401, "invalid")
		default:
			b.refresh[req.RefreshToken] = false
			json.NewEncoder(w).Encode(b.mint(now))
		}
	case RevokePath:
		b.revokes++
		w.WriteHeader(http.StatusNoContent)
	case AgentAPIPrefix + wire.AskPath:
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		exp, ok := b.access[tok]
		if b.failAccess[tok] {
			delete(b.failAccess, tok)
			ok = false
		}
		if !ok || !exp.After(now) {
			b.fail(w, 401, "invalid")
			return
		}
		b.asks++
		b.askTokens = append(b.askTokens, tok)
		var q wire.AskRequest
		json.Unmarshal(body, &q)
		json.NewEncoder(w).Encode(wire.AskReply{Status: wire.StatusAnswered, Question: q.Title, OptionIDs: []string{wire.Yes}})
	default:
		http.NotFound(w, r)
	}
}

// noSecrets fails t when any credential the double issued or received
// appears in any of outs (R6).
func (b *bridge) noSecrets(t *testing.T, outs ...string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.secrets {
		for _, o := range outs {
			if strings.Contains(o, s) {
				t.Errorf("a credential appears in output: %q", o)
			}
		}
	}
}

// agentEnv is a complete agent environment whose raft wrapper is the
// raft double: it records its arguments in args, prints envelope.json and
// exits with the status in exit (0 when missing); it writes a line with
// a fake credential to stderr, which must never be shown.
func agentEnv(t *testing.T) (loginstore.Env, string) {
	t.Helper()
	root := t.TempDir()
	home, transport := filepath.Join(root, "slock"), filepath.Join(root, "transport")
	for _, d := range []string{home, transport} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := `#!/bin/sh
dir=$(dirname "$0")
printf '%s\n' "$@" > "$dir/args"
echo "raft: STDERR-SECRET-GRANT" >&2
if [ -f "$dir/stderr.txt" ]; then cat "$dir/stderr.txt" >&2; fi
cat "$dir/envelope.json" 2>/dev/null
if [ -f "$dir/exit" ]; then exit "$(cat "$dir/exit")"; fi
exit 0
`
	if err := os.WriteFile(filepath.Join(transport, "raft"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{loginstore.MarkerTransportDir: transport, loginstore.MarkerHome: home, loginstore.MarkerAgentID: "agent-7"}
	a := loginstore.Admit(func(k string) string { return m[k] })
	if a.Kind != loginstore.Agent {
		t.Fatalf("Admit = %v %s", a.Kind, a.Reason)
	}
	return a.Env, transport
}

// envelopeFor is the raft double's answer for grant, expiring at exp.
func envelopeFor(service, grant string, exp time.Time) string {
	return fmt.Sprintf(`{"ok":true,"data":{"service":%q,"action":"agent-login","status":200,"result":{"schema":"raft-cli-agent-login-grant.v1","service":%q,"grant":%q,"expires_at":%q}}}`,
		service, service, grant, exp.UTC().Format(time.RFC3339))
}
