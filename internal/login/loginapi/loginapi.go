// Package loginapi is the bridge's service for agents on an agent
// platform (R1, R5, R8, R11): the Raft app surface (the
// manifest, the agent-login action, migration-help), the token endpoints
// (exchange, refresh, revoke) and the agent API (whoami, ask), served
// beside the device API on its listener (loginwire.Routes). Grants and
// sessions are internal/login/loginservice's; an agent's questions go to its own
// board, which the bridge hosts and shows on devices like any durable
// agent (Boards). An agent session may ask its human and read its own
// questions' answers; it can never answer, nor reach another agent.
package loginapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/bearer"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Boards gives an agent session its board: the handler of the hosted
// agent's routes for id (durable.Server.Hosted), made and shown on
// devices at its first use. Only wire.AskPath is ever called on it here.
type Boards interface {
	Board(ctx context.Context, id loginservice.Identity) (name string, h http.Handler, err error)
}

// Options configure the service.
type Options struct {
	Store *loginservice.Store
	// Platform checks the agent-login action's caller; nil leaves agent
	// login off (PlatformOff says why), while existing sessions work on.
	Platform    *Platform
	PlatformOff string
	Boards      Boards
	// Base is the bridge's address for agents and the platform: public_url
	// when set, else the listener's own URL.
	Base func() string
	Log  *slog.Logger
}

// API serves the routes of loginwire.Routes.
type API struct {
	o      Options
	routes map[string]route // by path
}

// route is one path of the surface: its method and handler.
type route struct {
	method string
	h      http.HandlerFunc
}

// maxBody caps a token endpoint's or the action's request body.
const maxBody = 16 << 10

// New returns the service.
func New(o Options) *API {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	a := &API{o: o, routes: map[string]route{}}
	handlers := map[string]http.HandlerFunc{
		loginwire.ManifestPath:      a.manifest,
		loginwire.MigrationHelpPath: a.migrationHelp,
		loginwire.LoginActionPath:   a.loginAction,
		loginwire.ExchangePath:      a.exchange,
		loginwire.RefreshPath:       a.refresh,
		loginwire.RevokePath:        a.revoke,
		loginwire.WhoamiPath:        a.whoami,
		loginwire.AskPath:           a.ask,
		loginwire.QuestionsPath:     a.questions,
	}
	for _, r := range loginwire.Routes() {
		h, ok := handlers[r.Path]
		if !ok {
			panic("loginapi: no handler for " + r.Path)
		}
		a.routes[r.Path] = route{r.Method, h}
	}
	return a
}

// ServeHTTP serves the surface's routes; any other path or method is
// refused in the surface's one error shape, never by a plain-text page.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	rt, ok := a.routes[r.URL.Path]
	switch {
	case !ok:
		fail(w, http.StatusNotFound, loginwire.CodeNotFound, "the agent surface has no route "+clip(r.URL.Path)+"; see "+loginwire.MigrationHelpPath)
	case r.Method == rt.method || r.Method == http.MethodHead && rt.method == http.MethodGet:
		rt.h(w, r)
	default:
		w.Header().Set("Allow", rt.method)
		fail(w, http.StatusMethodNotAllowed, loginwire.CodeMethodNotAllowed, r.URL.Path+" answers "+rt.method+" only")
	}
}

// clip keeps a path a caller sent short in a reply.
func clip(p string) string {
	if len(p) > 64 {
		return p[:64] + "..."
	}
	return p
}

// fail answers a refusal in the surface's one shape (loginwire.ErrorBody,
// docs/agent-login.md). A 401 says so to a bearer client (RFC 6750).
func fail(w http.ResponseWriter, status int, code, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	}
	var e loginwire.ErrorBody
	e.Error.Code, e.Error.Message = code, msg
	writeJSON(w, status, e)
}

func failWith(w http.ResponseWriter, err error) {
	var e *loginservice.Error
	if errors.As(err, &e) {
		fail(w, e.Status, e.Code, e.Message)
		return
	}
	fail(w, http.StatusServiceUnavailable, loginwire.CodeTemporarilyUnavailable, "the bridge could not do that now; try again")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)+1))
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// decode reads a request body of at most maxBody bytes into v, closed:
// an unknown or repeated member is refused, and *schema (v's schema
// member) must be want.
func decode(w http.ResponseWriter, r *http.Request, v any, schema *string, want string) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		fail(w, http.StatusBadRequest, loginwire.CodeInvalid, "the request's body could not be read")
		return false
	case len(data) > maxBody:
		fail(w, http.StatusRequestEntityTooLarge, loginwire.CodeInvalid, "the request's body is larger than 16 KiB")
		return false
	}
	if err := jsonstrict.Unmarshal(data, v); err != nil {
		fail(w, http.StatusBadRequest, loginwire.CodeInvalid, "the request is not the schema's JSON: "+err.Error())
		return false
	}
	if *schema != want {
		fail(w, http.StatusBadRequest, loginwire.CodeInvalid, "schema must be "+want)
		return false
	}
	return true
}

// session is the reply of exchange and refresh, in the contract's key
// order.
type session struct {
	Schema           string  `json:"schema"`
	TokenType        string  `json:"token_type"`
	AccessToken      string  `json:"access_token"`
	AccessExpiresAt  string  `json:"access_expires_at"`
	RefreshToken     string  `json:"refresh_token"`
	RefreshExpiresAt *string `json:"refresh_expires_at"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func replySession(w http.ResponseWriter, t loginservice.Tokens) {
	w.Header().Set("Pragma", "no-cache")
	re := stamp(t.RefreshExpires)
	writeJSON(w, http.StatusOK, session{loginwire.SchemaSession, loginwire.TokenType, t.Access, stamp(t.AccessExpires), t.Refresh, &re})
}

// loginAction is the agent-login action, called by the platform with its
// assertion: a grant for the agent the platform proved, bound to the
// challenge (R5).
func (a *API) loginAction(w http.ResponseWriter, r *http.Request) {
	if a.o.Platform == nil {
		msg := "agent login is off on this bridge: " + a.o.PlatformOff
		a.o.Log.Warn("agent-login action refused: " + msg)
		fail(w, http.StatusServiceUnavailable, loginwire.CodeTemporarilyUnavailable, msg)
		return
	}
	c, err := a.o.Platform.Verify(r.Header.Get(AssertionHeader))
	if err != nil {
		a.o.Log.Warn("agent-login action refused", "reason", err.Error())
		fail(w, http.StatusUnauthorized, loginwire.CodeInvalid, err.Error())
		return
	}
	var req struct {
		Schema              string `json:"schema"`
		CodeChallenge       string `json:"code_challenge"`
		CodeChallengeMethod string `json:"code_challenge_method"`
	}
	if !decode(w, r, &req, &req.Schema, loginwire.SchemaLoginRequest) {
		return
	}
	switch {
	case req.CodeChallengeMethod != loginwire.MethodS256:
		fail(w, http.StatusBadRequest, loginwire.CodeInvalid, "code_challenge_method must be S256")
		return
	case !loginwire.ValidChallenge(req.CodeChallenge):
		fail(w, http.StatusBadRequest, loginwire.CodeInvalid, "code_challenge must be an unpadded base64url SHA-256 (43 characters)")
		return
	case req.CodeChallenge != c.CodeChallenge:
		fail(w, http.StatusBadRequest, loginwire.CodeBindingMismatch, "the code_challenge is not the one the platform's assertion names")
		return
	}
	id := loginservice.Identity{Agent: c.Sub, Server: c.Iss, App: c.App}
	grant, exp, err := a.o.Store.Grant(id, req.CodeChallenge)
	if err != nil {
		a.o.Log.Warn("agent-login action refused", "agent", id.Agent, "server", id.Server, "reason", err.Error())
		failWith(w, err)
		return
	}
	a.o.Log.Info("agent login grant issued", "agent", id.Agent, "server", id.Server, "app", id.App, "expires", stamp(exp))
	writeJSON(w, http.StatusOK, struct {
		Schema    string `json:"schema"`
		Service   string `json:"service"`
		Grant     string `json:"grant"`
		ExpiresAt string `json:"expires_at"`
	}{loginwire.SchemaGrant, loginwire.Service, grant, stamp(exp)})
}

func (a *API) exchange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Schema       string `json:"schema"`
		Grant        string `json:"grant"`
		CodeVerifier string `json:"code_verifier"`
	}
	if !decode(w, r, &req, &req.Schema, loginwire.SchemaExchange) {
		return
	}
	t, err := a.o.Store.Exchange(req.Grant, req.CodeVerifier)
	if err != nil {
		failWith(w, err)
		return
	}
	replySession(w, t)
}

func (a *API) refresh(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Schema       string `json:"schema"`
		RefreshToken string `json:"refresh_token"`
	}
	if !decode(w, r, &req, &req.Schema, loginwire.SchemaRefresh) {
		return
	}
	t, err := a.o.Store.Refresh(req.RefreshToken)
	if err != nil {
		failWith(w, err)
		return
	}
	replySession(w, t)
}

// revoke ends the chain of the refresh token in the body, or of the
// access token sent as bearer (logout sends both). An unknown token is
// no error (RFC 7009): the caller's session is gone either way.
func (a *API) revoke(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Schema       string `json:"schema"`
		RefreshToken string `json:"refresh_token"`
	}
	if !decode(w, r, &req, &req.Schema, loginwire.SchemaRevoke) {
		return
	}
	if _, err := a.o.Store.Revoke(req.RefreshToken, bearerToken(r)); err != nil {
		failWith(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// bearerToken is the request's bearer token (bearer.Token, the one parser
// of Authorization), "" when it carries none: a bare token is none.
func bearerToken(r *http.Request) string {
	tok, _ := bearer.Token(r.Header)
	return tok
}

// authed is the session of the request's access token, or a 401.
func (a *API) authed(w http.ResponseWriter, r *http.Request) (loginservice.Session, bool) {
	s, err := a.o.Store.Authenticate(bearerToken(r))
	if err != nil {
		var e *loginservice.Error
		code, msg := loginwire.CodeInvalid, "the access token is not valid; collie refreshes it, or run collie login --url BASE again"
		if errors.As(err, &e) && e.Code == loginwire.CodeExpired {
			code, msg = loginwire.CodeExpired, "the access token expired; collie refreshes it"
		}
		fail(w, http.StatusUnauthorized, code, msg)
		return loginservice.Session{}, false
	}
	return s, true
}

func (a *API) whoami(w http.ResponseWriter, r *http.Request) {
	s, ok := a.authed(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Kind             string `json:"kind"`
		Service          string `json:"service"`
		Agent            string `json:"agent_id"`
		Server           string `json:"server"`
		App              string `json:"app"`
		Session          string `json:"session"`
		AccessExpiresAt  string `json:"access_expires_at"`
		RefreshExpiresAt string `json:"refresh_expires_at"`
	}{"agent", loginwire.Service, s.Identity.Agent, s.Identity.Server, s.Identity.App, s.Chain, stamp(s.AccessExpires), stamp(s.RefreshExpires)})
}

// ask puts the agent's question on its own board and answers as a
// durable agent's /v1/ask does (wire.AskRequest in, wire.AskReply out).
func (a *API) ask(w http.ResponseWriter, r *http.Request) {
	a.onBoard(w, r, http.MethodPost, wire.AskPath, r.Body)
}

// questions reads the agent's own board: its conversation with its
// questions and the answers given, as a durable agent's snapshot
// (wire.Snapshot).
func (a *API) questions(w http.ResponseWriter, r *http.Request) {
	a.onBoard(w, r, http.MethodGet, wire.SnapshotPath, nil)
}

// onBoard serves the request, once its access token is checked, with the
// route method and path of the agent's own board, and nothing else of
// the request but its body and If-None-Match: an agent session reaches
// only these two routes of only its own board, so it never answers and
// never sees another agent's questions.
func (a *API) onBoard(w http.ResponseWriter, r *http.Request, method, path string, body io.Reader) {
	s, ok := a.authed(w, r)
	if !ok {
		return
	}
	// Everything the session authorised ends the moment it is revoked:
	// an ask already waiting for the human gets no answer after that.
	ctx, stop := a.o.Store.Watch(r.Context(), s.Chain)
	defer stop()
	name, h, err := a.o.Boards.Board(ctx, s.Identity)
	if err != nil {
		a.o.Log.Warn("agent session's board unavailable", "agent", s.Identity.Agent, "err", err)
		fail(w, http.StatusServiceUnavailable, loginwire.CodeTemporarilyUnavailable, "the bridge cannot reach this agent's questions now; try again")
		return
	}
	in, err := http.NewRequestWithContext(ctx, method, "http://hosted"+path, body)
	if err != nil {
		failWith(w, err)
		return
	}
	if body != nil {
		in.ContentLength = r.ContentLength
		in.Header.Set("Content-Type", "application/json")
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		in.Header.Set("If-None-Match", inm)
	}
	in.Header.Set(wire.VersionHeader, strconv.Itoa(wire.Version))
	in.RequestURI = path
	a.o.Log.Debug("agent session on its board", "agent", s.Identity.Agent, "board", name, "route", path)
	cw := &cutWriter{ResponseWriter: w, ctx: ctx}
	h.ServeHTTP(cw, in)
	if cw.revoked() {
		a.o.Log.Info("cut an agent session's request: the session was revoked", "agent", s.Identity.Agent, "chain", s.Chain, "route", path)
		fail(w, http.StatusUnauthorized, loginwire.CodeInvalid, "the agent session was revoked while the request waited; run collie login --url BASE again")
	}
}

// cutWriter passes the board's reply through until the session is
// revoked (its context ends with loginservice.ErrRevoked); from then on it
// drops what the board writes, so an answer given after the revocation
// never reaches the revoked session, and onBoard answers 401 instead.
type cutWriter struct {
	http.ResponseWriter
	ctx context.Context

	mu    sync.Mutex
	wrote bool // the board's reply started before any revocation
	cut   bool // a revocation came first: nothing of the board's is sent
}

// pass reports whether the board may write now, and records that it did.
func (c *cutWriter) pass() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.wrote && !c.cut && errors.Is(context.Cause(c.ctx), loginservice.ErrRevoked) {
		c.cut = true
	}
	c.wrote = c.wrote || !c.cut
	return !c.cut
}

func (c *cutWriter) WriteHeader(status int) {
	if c.pass() {
		c.ResponseWriter.WriteHeader(status)
	}
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if !c.pass() {
		return 0, loginservice.ErrRevoked
	}
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (the board
// sets its write deadline for a long wait).
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// revoked reports, once the board returned, whether the session was
// revoked before its reply started: the caller then answers 401.
func (c *cutWriter) revoked() bool {
	c.pass()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

// manifest is the Raft app surface's description (R11).
func (a *API) manifest(w http.ResponseWriter, r *http.Request) {
	base := a.o.Base()
	type endpoint struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	}
	type param struct {
		Type        string `json:"type"`
		In          string `json:"in"`
		Required    bool   `json:"required"`
		Description string `json:"description"`
	}
	type action struct {
		Name        string           `json:"name"`
		Description string           `json:"description"`
		Endpoint    endpoint         `json:"endpoint"`
		Parameters  map[string]param `json:"parameters,omitempty"`
	}
	writeJSON(w, http.StatusOK, struct {
		Schema      string            `json:"schema"`
		Service     string            `json:"service"`
		DocsURL     string            `json:"docs_url"`
		Execution   map[string]string `json:"execution"`
		Credentials map[string]string `json:"credentials"`
		Actions     []action          `json:"actions"`
	}{
		Schema:  loginwire.SchemaManifest,
		Service: loginwire.Service,
		DocsURL: "https://github.com/collie-linux/collie/blob/main/docs/agent-login.md",
		Execution: map[string]string{
			"mode":     "http_api",
			"base_url": base,
		},
		Credentials: map[string]string{
			"boundary":  "agent_home",
			"store":     "$SLOCK_HOME/agents/$SLOCK_AGENT_ID/integrations/" + loginwire.Service + "/auth.json",
			"user_home": "forbidden",
		},
		Actions: []action{
			{
				Name: loginwire.ActionLogin,
				Description: "Agent CLI bootstrap: send " + loginwire.SchemaLoginRequest + " with a PKCE S256 code_challenge; receive a one-time " +
					loginwire.SchemaGrant + " valid at most 300 s, bound to your agent, server and app, then exchange it with your code_verifier at POST " +
					loginwire.ExchangePath + ". Run `collie login --url " + base + "`, which does all of this.",
				Endpoint: endpoint{"POST", loginwire.LoginActionPath},
				Parameters: map[string]param{
					"schema":                {"string", "body", true, "Must be \"" + loginwire.SchemaLoginRequest + "\". Closed input."},
					"code_challenge":        {"string", "body", true, "Unpadded base64url SHA-256 of your code_verifier (43 characters)."},
					"code_challenge_method": {"string", "body", true, "Must be \"S256\"."},
				},
			},
			{
				Name:        loginwire.ActionMigrationHelp,
				Description: "How to install collie, log in (collie login), recover a lost session, and which collie command does what.",
				Endpoint:    endpoint{"GET", loginwire.MigrationHelpPath},
			},
		},
	})
}

// migrationHelp tells an agent how to install, log in and recover, and
// which CLI command does what (R11). Collie had no actions before these
// two, so none is deprecated.
func (a *API) migrationHelp(w http.ResponseWriter, r *http.Request) {
	base := a.o.Base()
	type command struct {
		Task    string `json:"task"`
		Command string `json:"command"`
	}
	writeJSON(w, http.StatusOK, struct {
		Service    string            `json:"service"`
		Summary    string            `json:"summary"`
		Install    []string          `json:"install"`
		Login      map[string]string `json:"login"`
		Recovery   []string          `json:"recovery"`
		Commands   []command         `json:"commands"`
		Deprecated []string          `json:"deprecated_actions"`
	}{
		Service: loginwire.Service,
		Summary: "collie asks the human who supervises you, on their phone. Use the collie CLI; the only actions are agent-login (which collie login calls) and this one. No older action exists, so none is deprecated.",
		Install: []string{
			"Debian and Ubuntu: install the collie .deb (apt install ./collie_VERSION_ARCH.deb); it puts collie on PATH.",
			"collie --version prints the installed version.",
		},
		Login: map[string]string{
			"agents": fmt.Sprintf("Inside a platform agent run `collie login --url %s` once: it finds the agent environment (SLOCK_CLI_TRANSPORT_DIR, SLOCK_HOME, SLOCK_AGENT_ID), gets a one-time grant through the agent-login action, and keeps its session in $SLOCK_HOME/agents/$SLOCK_AGENT_ID/integrations/collie/auth.json, refreshing it by itself.", base),
			"humans": "A human pairs a phone or browser with `collie pair` and uses the local control socket; agent login never changes that.",
		},
		Recovery: []string{
			fmt.Sprintf("A session that expired, was revoked or was refused: run `collie login --url %s` again.", base),
			"`collie whoami` says which session is stored and when it expires, without the network.",
			"`collie logout` removes the session and revokes it at the bridge.",
		},
		Commands: []command{
			{"log in", "collie login --url " + base},
			{"show the stored session", "collie whoami"},
			{"ask the human a yes/no question", `collie ask --yes-no "Deploy 1a2b3c?"`},
			{"ask the human to choose", `collie ask --choice eu --choice us "Which region?"`},
			{"ask for a line of text", `collie ask --line "Name of the release branch?"`},
			{"log out and revoke", "collie logout"},
		},
		Deprecated: []string{},
	})
}
