package loginclient

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// AgentAPIPrefix is where the bridge serves the agent API, below the base
// URL: /api/agent/v1/ask and /api/agent/v1/whoami.
const AgentAPIPrefix = loginwire.AgentAPIPrefix

// Transport carries requests to the bridge's agent API with the agent's
// bearer token: a fresh one before the request (Access), and after a 401
// one reload-and-refresh (AfterUnauthorized) and one retry, never more
// (R8). Requests go only to the session's own bridge, and redirects are
// not followed.
type Transport struct {
	Client *Client
	Base   http.RoundTripper // nil: the Client's (made on first use)

	mu sync.Mutex
}

func (t *Transport) base() (http.RoundTripper, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Base != nil {
		if _, ok := t.Base.(k2Transport); !ok {
			t.Base = k2Transport{t.Base}
		}
		return t.Base, nil
	}
	rt, err := t.Client.transport()
	if err == nil {
		t.Base = rt
	}
	return rt, err
}

// RoundTrip sends req with the bearer token.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	rec, err := t.Client.Access(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := t.send(req, rec.APIBase, rec.AccessToken)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	rec, err = t.Client.AfterUnauthorized(ctx, rec.AccessToken)
	if err != nil {
		return nil, err
	}
	resp, err = t.send(req, rec.APIBase, rec.AccessToken)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, loginAgain(rec.APIBase, errors.New("the bridge refused the agent session even after a refresh"))
	}
	return resp, err
}

// send is req against base with token, on a copy of req with a fresh body.
func (t *Transport) send(req *http.Request, base, token string) (*http.Response, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, errors.New("the stored bridge URL does not parse; " + LoginHint(""))
	}
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, ""
	r.URL.Path = AgentAPIPrefix + req.URL.Path
	r.URL.RawPath = ""
	if req.GetBody != nil {
		if r.Body, err = req.GetBody(); err != nil {
			return nil, err
		}
	}
	r.Header.Set("Authorization", "Bearer "+token)
	rt, err := t.base()
	if err != nil {
		return nil, err
	}
	return rt.RoundTrip(r)
}

// HTTPClient is an http.Client over Transport that follows no redirect: a
// request's path ("/v1/ask") is sent to the session's bridge below
// AgentAPIPrefix, whatever host the request names.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{
		Transport:     &Transport{Client: c},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// k2Transport is the last step of every request collie sends a bridge in
// an agent environment: login's exchange, refresh, logout's revocation and
// the agent API. It refuses, before a byte is sent, a request whose
// address is not a bridge URL CheckBase accepts (K2: https://, or
// http:// to 127.0.0.1 or localhost), whatever the stored session's
// api_base says: a session file written by hand or by another tool never
// sends its tokens elsewhere.
type k2Transport struct{ next http.RoundTripper }

func (t k2Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if _, err := CheckBase(r.URL.Scheme + "://" + r.URL.Host); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, loginAgain("", fmt.Errorf("collie sends the agent session's credentials to no such address: %w", err))
	}
	return t.next.RoundTrip(r)
}
