// Package loginclient is the service-CLI half of agent login for `collie`
// on an agent platform (R2, R6, R8, R9): `collie login --url BASE` makes a
// PKCE verifier, runs the platform's own `raft` wrapper in the agent's
// transport folder for the `agent-login` action with only the challenge,
// exchanges the one-time grant and the verifier directly with the bridge,
// and stores the session with internal/login/loginstore. Every later command
// gets its access token from Client.Access, which refreshes it within 60 s
// of its expiry, and after a 401 reloads the store, refreshes once and
// retries once (Transport). Refreshes of concurrent collie processes are
// one: an flock(2) on a lock file in the service's 0700 folder, never
// deleted and never broken because time passed; after taking it a process
// reloads the store and refreshes only if the refresh token is still the
// one it had.
//
// The token endpoints (exchange, refresh, revoke) follow no redirect, read
// at most 64 KiB, and run under one 20 s deadline over the request, the
// body, the parse and the store's write; a reply with a member not in the
// closed schema, or a session already expired, is refused.
//
// Grants, verifiers and tokens are credentials (R6): no error, log line or
// output of this package carries one, nor the raft wrapper's output, nor
// an error body of a token endpoint beyond its code from the closed set.
// The one sentence of the bridge's it shows is its refusal of the
// agent-login action, as the wrapper passes it on (ActionRefusal): cleaned
// as untrusted text, and left out when it holds anything shaped like a
// token.
//
// The reference implementation is Hands (github.com/botiverse/hands,
// packages/cli/src/lib/agent_auth.ts and agent_refresh.ts); where it and
// this package differ, docs/agent-login.md says so.
package loginclient

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Service is Collie's service slug on the platform and in the store.
const Service = loginwire.Service

// The wire's schemas.
const (
	SchemaLoginRequest = loginwire.SchemaLoginRequest
	SchemaGrant        = loginwire.SchemaGrant
	SchemaExchange     = loginwire.SchemaExchange
	SchemaRefresh      = loginwire.SchemaRefresh
	SchemaRevoke       = loginwire.SchemaRevoke
)

// The bridge's token endpoints, below the base URL.
const (
	ExchangePath = loginwire.ExchangePath
	RefreshPath  = loginwire.RefreshPath
	RevokePath   = loginwire.RevokePath
)

// Limits of the token endpoints (R9) and of refresh (R8).
const (
	MaxTokenReply   = 64 << 10         // bytes of a token endpoint's reply
	TokenDeadline   = 20 * time.Second // request, body, parse and persist, together
	RefreshSkew     = 60 * time.Second // refresh when the access token expires within this
	GrantCeiling    = 300*time.Second + 120*time.Second
	LockWait        = 30 * time.Second // how long a process waits for another's refresh
	raftDeadline    = 60 * time.Second
	maxRaftOutput   = 64 << 10
	verifierEntropy = 64 // random bytes of a PKCE verifier (86 base64url characters)
)

// Client does agent login, refresh and logout for one agent environment.
type Client struct {
	Env     loginstore.Env
	Service string
	// HTTP carries the token requests and the agent API; nil is a plain
	// client. Its redirect policy and timeouts are replaced by this
	// package's.
	HTTP *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Environ is the raft wrapper's environment; nil is the process's.
	Environ []string
	// CA is a PEM certificate to trust for the bridge besides the system's
	// roots (collie login --ca-file); Login keeps it for later requests.
	// Nil: the one a login kept, if any.
	CA []byte

	login bool // during Login: trust c.CA alone, never a stored one
}

// New is a Client for Collie's service in e.
func New(e loginstore.Env) *Client { return &Client{Env: e, Service: Service} }

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// LoginHint is the fix for every session that is gone or refused.
func LoginHint(base string) string {
	if base == "" {
		base = "BASE"
	}
	return "run `collie login --url " + base + "` again"
}

// ErrNoSession is there being no stored session: the agent never logged in,
// or logged out.
var ErrNoSession = errors.New("this agent has no collie session")

// loginAgain is an error whose fix is a new login.
func loginAgain(base string, err error) error { return hint.Wrap(err, LoginHint(base)) }

// CheckBase holds a bridge URL to K2's rules: https://, or http:// only to
// 127.0.0.1 or localhost with a port; at most 2048 bytes; no user name,
// password, path, query or fragment. Its errors never repeat the URL. It
// returns the URL as stored (without a trailing slash).
func CheckBase(raw string) (string, error) {
	const fix = "give the bridge's address as https://HOST[:PORT] (or http://127.0.0.1:PORT on this machine)"
	bad := func(why string) (string, error) { return "", hint.Errorf(fix, "the bridge URL %s", why) }
	if len(raw) > 2048 {
		return bad("is longer than 2048 bytes")
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] <= ' ' || raw[i] >= 0x7f {
			return bad("has a space, a control or a non-ASCII character")
		}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return bad("does not parse")
	case u.User != nil:
		return bad("has a user name or password")
	case u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "?"):
		return bad("has a query")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return bad("has a fragment")
	case u.Opaque != "" || (u.Path != "" && u.Path != "/"):
		return bad("has a path")
	case u.Hostname() == "":
		return bad("has no host")
	}
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return bad("has a port that is not a number from 1 to 65535")
		}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" {
			return bad("is plain http:// to another machine; use https:// (http:// is only for 127.0.0.1 or localhost)")
		}
		if port == "" {
			return bad("is http:// without a port")
		}
	default:
		return bad("does not start with https://")
	}
	return u.Scheme + "://" + u.Host, nil
}

// PKCE is a verifier and its S256 challenge (RFC 7636).
type PKCE struct{ Verifier, Challenge string }

// NewPKCE makes a verifier of 64 random bytes in base64url and its
// challenge, base64url(SHA-256(verifier)), both unpadded.
func NewPKCE() PKCE {
	b := make([]byte, verifierEntropy)
	rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	return PKCE{Verifier: v, Challenge: Challenge(v)}
}

// Challenge is the S256 challenge of verifier.
func Challenge(verifier string) string {
	return loginwire.Challenge(verifier)
}

// loginRequest is the agent-login action's data, in this key order.
type loginRequest struct {
	Schema              string `json:"schema"`
	CodeChallenge       string `json:"code_challenge"`
	CodeChallengeMethod string `json:"code_challenge_method"`
}

// RaftArgs are the arguments of the raft wrapper for the agent-login
// action with challenge.
func RaftArgs(service, challenge string) []string {
	data, _ := jsonCompact(loginRequest{SchemaLoginRequest, challenge, "S256"})
	return []string{"integration", "invoke", "--service", service, "--action", "agent-login", "--json", "--data-json", string(data)}
}

// Login runs the whole agent login against base (already checked with
// CheckBase) and stores the session. It starts afresh: the stored session,
// if any, is neither read nor refreshed, and is replaced only by a session
// the bridge issued and this package accepted.
func (c *Client) Login(ctx context.Context, base string) (loginstore.Record, error) {
	// Checked here as well as by the command line: a grant is single use,
	// and the exchange would refuse such a base anyway (k2Transport).
	if _, err := CheckBase(base); err != nil {
		return loginstore.Record{}, err
	}
	// The store's folder first: a grant is single use, and spending one on
	// a session that cannot be stored would waste it.
	if _, err := loginstore.Dir(c.Env, c.Service); err != nil {
		return loginstore.Record{}, fmt.Errorf("cannot keep a session in this agent's home: %w", err)
	}
	c.login = true
	defer func() { c.login = false }()
	p := NewPKCE()
	grant, err := c.invokeAgentLogin(ctx, p.Challenge)
	if err != nil {
		return loginstore.Record{}, err
	}
	body := exchangeRequest{SchemaExchange, grant, p.Verifier}
	rec, err := c.tokenRequest(ctx, base, ExchangePath, body, "the grant exchange")
	if err != nil {
		return rec, err
	}
	// The certificate goes with the session: a new one, or none.
	if err := c.keepCA(c.CA); err != nil {
		loginstore.Remove(c.Env, c.Service)
		return loginstore.Record{}, fmt.Errorf("could not keep the bridge's certificate beside the session, so the session is removed again: %w", err)
	}
	return rec, nil
}

type exchangeRequest struct {
	Schema       string `json:"schema"`
	Grant        string `json:"grant"`
	CodeVerifier string `json:"code_verifier"`
}

// invokeAgentLogin runs $SLOCK_CLI_TRANSPORT_DIR/raft (never the one on
// PATH) and returns the grant from its envelope. Its output is never
// shown: it carries the grant.
func (c *Client) invokeAgentLogin(ctx context.Context, challenge string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, raftDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Env.RaftBin, RaftArgs(c.Service, challenge)...)
	cmd.Env = c.Environ
	out, errOut := &cappedBuffer{max: maxRaftOutput}, &cappedBuffer{max: maxRaftOutput}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return "", hint.Errorf("check that the agent platform's daemon is running, then try again",
			"the platform's raft wrapper did not answer the agent-login action within %s", raftDeadline)
	case errors.As(err, &ee):
		// The bridge's own reason, when the wrapper passed it on; never
		// anything else the wrapper wrote.
		if r := wrapperFailure(errOut.Bytes(), out.Bytes()); r != nil {
			return "", actionRefusedError(r)
		}
		return "", hint.Errorf("check that the collie app is installed for this agent on the platform, then try again",
			"the platform's raft wrapper refused the agent-login action (exit status %d)", ee.ExitCode())
	case err != nil:
		return "", fmt.Errorf("could not run the platform's raft wrapper %s: %w", c.Env.RaftBin, errors.Unwrap(err))
	case out.over:
		return "", errors.New("agent-login: the raft wrapper's output is larger than 64 KiB")
	}
	g, err := ParseEnvelope(out.Bytes(), c.Service, c.now())
	if err != nil {
		return "", err
	}
	return g.Grant, nil
}
