package loginclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// RefusedError is a token endpoint's refusal: the HTTP status and the code
// from the closed set ("" when the reply carried none of them). Its
// message never carries the bridge's text.
type RefusedError struct {
	What   string // "the grant exchange", "the refresh", "the revocation"
	Status int
	Code   string
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("%s was refused by the bridge (HTTP %d", e.What, e.Status)
	if e.Code != "" {
		s += ", " + e.Code
	}
	return s + ")"
}

// Terminal reports whether the refusal ends the session: the refresh token
// is expired, revoked, reused or invalid, and only a new login helps.
func (e *RefusedError) Terminal() bool {
	return e.Status >= 400 && e.Status < 500 && e.Code != "temporarily_unavailable"
}

// httpClient is the client of the token endpoints: no redirect followed,
// no timeout of its own (the callers' contexts decide).
func (c *Client) httpClient() (*http.Client, error) {
	t, err := c.transport()
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// post sends body as JSON to base+path under ctx, and returns the reply's
// status and at most MaxTokenReply bytes of its body. A redirect is
// refused, never followed (its body would carry a credential elsewhere).
func (c *Client) post(ctx context.Context, base, path string, body any, bearer string) (int, []byte, error) {
	data, err := jsonCompact(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(data))
	if err != nil {
		return 0, nil, errors.New("the bridge URL cannot carry a request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	hc, err := c.httpClient()
	if err != nil {
		return 0, nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, netError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, nil, fmt.Errorf("the bridge answered %s with a redirect (HTTP %d), which Collie never follows from a token endpoint", path, resp.StatusCode)
	}
	if resp.ContentLength > MaxTokenReply {
		return resp.StatusCode, nil, fmt.Errorf("the bridge's reply from %s is larger than 64 KiB", path)
	}
	reply, err := io.ReadAll(io.LimitReader(resp.Body, MaxTokenReply+1))
	if err != nil {
		return resp.StatusCode, nil, netError(ctx, err)
	}
	if len(reply) > MaxTokenReply {
		return resp.StatusCode, nil, fmt.Errorf("the bridge's reply from %s is larger than 64 KiB", path)
	}
	return resp.StatusCode, reply, nil
}

// netError is err without the URL net/http puts in it, and a deadline
// said as one.
func netError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the bridge did not answer within %s", TokenDeadline)
	}
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		err = ue.Unwrap()
	}
	return hint.Wrap(fmt.Errorf("cannot reach the bridge: %w", err), "check that the bridge runs and that its address is the one given to collie login --url")
}

// refused is the RefusedError of a non-200 reply: the code of the agent
// surface's one refusal shape (loginwire.ErrorBody), when it is in the
// closed set.
func refused(what string, status int, reply []byte) *RefusedError {
	var e loginwire.ErrorBody
	re := &RefusedError{What: what, Status: status}
	if jsonstrict.Unmarshal(reply, &e, jsonstrict.Open) == nil && loginwire.KnownCode(e.Error.Code) {
		re.Code = e.Error.Code
	}
	return re
}

// tokenRequest posts body to a token endpoint and stores the session it
// returns, all under one TokenDeadline: request, body, parse and the
// store's write. Nothing is stored unless the whole reply is accepted in
// time, so a refusal leaves the old session as it was.
func (c *Client) tokenRequest(ctx context.Context, base, path string, body any, what string) (loginstore.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, TokenDeadline)
	defer cancel()
	status, reply, err := c.post(ctx, base, path, body, "")
	if err != nil {
		return loginstore.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	if status != http.StatusOK {
		return loginstore.Record{}, refused(what, status, reply)
	}
	now := c.now()
	s, err := ParseSession(reply, now)
	if err != nil {
		return loginstore.Record{}, fmt.Errorf("%s: the bridge's reply was refused: %w", what, err)
	}
	if ctx.Err() != nil {
		return loginstore.Record{}, fmt.Errorf("%s: the bridge did not answer within %s; nothing was stored", what, TokenDeadline)
	}
	if _, err := loginstore.Write(c.Env, c.Service, s, base, now); err != nil {
		return loginstore.Record{}, fmt.Errorf("%s: could not store the session: %w", what, err)
	}
	return loginstore.Record{Session: s, Service: c.Service, APIBase: base, UpdatedAt: loginstore.ISOTime(now)}, nil
}

// revokeRequest is the revocation's body.
type revokeRequest struct {
	Schema       string `json:"schema"`
	RefreshToken string `json:"refresh_token"`
}

// LogoutResult is what Logout did.
type LogoutResult struct {
	Removed bool   // there was an auth.json, and it is gone
	APIBase string // the bridge the session was for ("" without a readable session)
	// Revoke is why the bridge was not told to revoke the chain (nil: it
	// was, or there was no session to revoke). It does not undo the
	// local logout.
	Revoke error
}

// Logout removes the stored session (only this service's auth.json, the
// lock file stays) and asks the bridge to revoke its chain. The error is
// only for the local removal.
func (c *Client) Logout(ctx context.Context) (LogoutResult, error) {
	rec, ok := loginstore.Read(c.Env, c.Service)
	removed, err := loginstore.Remove(c.Env, c.Service)
	if err != nil {
		return LogoutResult{}, fmt.Errorf("could not remove the stored session: %w", err)
	}
	res := LogoutResult{Removed: removed}
	if !ok {
		return res, nil
	}
	res.APIBase = rec.APIBase
	ctx, cancel := context.WithTimeout(ctx, TokenDeadline)
	defer cancel()
	status, reply, err := c.post(ctx, rec.APIBase, RevokePath, revokeRequest{SchemaRevoke, rec.RefreshToken}, rec.AccessToken)
	switch {
	case err != nil:
		res.Revoke = err
	case status != http.StatusNoContent && status != http.StatusOK:
		res.Revoke = refused("the revocation", status, reply)
	}
	return res, nil
}
