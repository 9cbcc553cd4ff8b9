// Package loginwire is the agent-login contract between the collie CLI in
// an agent's environment (internal/login/loginclient) and the bridge as its
// service (internal/login/loginservice, internal/login/loginapi): the service slug, the
// schemas, the routes, the closed set of error codes and the PKCE S256
// proof (R1, R5, R9; docs/agent-login.md). Both halves read it from here.
package loginwire

import (
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// Service is Collie's service slug on the platform and in the store.
const Service = "collie"

// The wire's schemas.
const (
	SchemaLoginRequest = "raft-cli-agent-login-request.v1"
	SchemaGrant        = "raft-cli-agent-login-grant.v1"
	SchemaExchange     = "raft-cli-agent-login-exchange.v1"
	SchemaRefresh      = "raft-cli-agent-refresh.v1"
	SchemaRevoke       = "raft-cli-agent-revoke.v1"
	SchemaSession      = "raft-cli-agent-session.v1"
	SchemaManifest     = "raft-agent-manifest.v0"
	TokenType          = "Bearer"
	MethodS256         = "S256"
)

// The bridge's routes, below its base URL.
const (
	ManifestPath      = "/.well-known/raft-agent-manifest.json"
	LoginActionPath   = "/api/auth/agent/login" // the agent-login action, called by the platform
	ExchangePath      = "/api/auth/agent/exchange"
	RefreshPath       = "/api/auth/agent/refresh"
	RevokePath        = "/api/auth/agent/revoke"
	MigrationHelpPath = "/api/agent/migration-help"
	AgentAPIPrefix    = "/api/agent"
	WhoamiPath        = AgentAPIPrefix + "/v1/whoami"
	AskPath           = AgentAPIPrefix + "/v1/ask"
	QuestionsPath     = AgentAPIPrefix + "/v1/questions"
)

// Actions of the platform's app surface.
const (
	ActionLogin         = "agent-login"
	ActionMigrationHelp = "migration-help"
)

// The closed set of error codes of the token endpoints and the agent API.
const (
	CodeInvalid                = "invalid"
	CodeExpired                = "expired"
	CodeConsumed               = "consumed"
	CodeBindingMismatch        = "binding_mismatch"
	CodeGrantProofMismatch     = "grant_proof_mismatch"
	CodeTemporarilyUnavailable = "temporarily_unavailable"
)

// Codes of the agent surface's own answers to a path or a method it does
// not serve (the device API's listener uses the same words).
const (
	CodeNotFound         = "not-found"
	CodeMethodNotAllowed = "method-not-allowed"
)

// ErrorBody is the one shape of every refusal on the agent surface, from
// the service, from the listener in front of it (the Host check, the
// cross-site refusal, the rate limit) and from an agent's board (its ask
// route), as docs/agent-login.md lists them:
//
//	{"error":{"code":CODE,"message":SENTENCE}}
//
// with "hint" beside "message" where the listener has a fix to give apart
// from it. It is the device API's and the durable agent protocol's error
// shape, so one client reads them all.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Hint    string `json:"hint,omitempty"`
	} `json:"error"`
}

// codes is the closed set, for checking a code read from the wire.
var codes = map[string]bool{CodeInvalid: true, CodeExpired: true, CodeConsumed: true,
	CodeBindingMismatch: true, CodeGrantProofMismatch: true, CodeTemporarilyUnavailable: true}

// KnownCode reports whether code is in the closed set.
func KnownCode(code string) bool { return codes[code] }

// Lifetimes the service grants (R5, R8).
const (
	GrantTTL   = 300 * time.Second
	AccessTTL  = 15 * time.Minute
	RefreshTTL = 30 * 24 * time.Hour
)

// Challenge is the S256 challenge of verifier: the unpadded base64url of
// its SHA-256 (RFC 7636).
func Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// ValidID reports whether s is a platform id: an agent's
// (SLOCK_AGENT_ID's rule, the session store's AGENT_ID_RE), a server's or
// an app installation's, ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
func ValidID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ValidVerifier reports whether v is an RFC 7636 code verifier: 43 to 128
// of [A-Za-z0-9-._~]. The service checks it before hashing, so a short
// or illegal verifier is never exchanged.
func ValidVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// ValidChallenge reports whether c is an S256 challenge: unpadded
// base64url decoding to exactly 32 bytes, in its one canonical spelling.
func ValidChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// Who may call a route of the agent surface.
const (
	AuthNone       = "none"       // anyone who reaches the bridge (the manifest, migration-help)
	AuthPlatform   = "platform"   // the platform, with its signed assertion (the agent-login action)
	AuthCredential = "credential" // the grant or refresh token in the body is the credential
	AuthAccess     = "access"     // an agent session's access token as bearer
)

// Route is one route of the bridge's agent surface, served beside the
// device API on the same listener.
type Route struct {
	Method, Path, Auth string
}

// Patterns are the http.ServeMux patterns the device API's router sends
// to the service: every route of Routes, a GET of every POST route (the
// service answers it method-not-allowed, where the web app would answer a
// page), and every other path below the surface's two prefixes (the
// service answers not-found), so that what reaches the agent surface is
// answered in its one error shape (ErrorBody).
func Patterns() []string {
	var ps []string
	for _, r := range Routes() {
		ps = append(ps, r.Method+" "+r.Path)
		if r.Method == "POST" {
			ps = append(ps, "GET "+r.Path)
		}
	}
	for _, prefix := range []string{AgentAPIPrefix + "/", "/api/auth/agent/"} {
		ps = append(ps, "GET "+prefix, "POST "+prefix)
	}
	return ps
}

// Routes lists the agent surface: the device API's router registers
// these (Patterns) and nothing else for it, and the service serves each.
func Routes() []Route {
	return []Route{
		{"GET", ManifestPath, AuthNone},
		{"GET", MigrationHelpPath, AuthNone},
		{"POST", LoginActionPath, AuthPlatform},
		{"POST", ExchangePath, AuthCredential},
		{"POST", RefreshPath, AuthCredential},
		{"POST", RevokePath, AuthCredential},
		{"GET", WhoamiPath, AuthAccess},
		{"POST", AskPath, AuthAccess},
		{"GET", QuestionsPath, AuthAccess},
	}
}
