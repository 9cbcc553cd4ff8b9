package loginclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// LockName is the refresh lock's file in the service's folder.
const LockName = "refresh.lock"

var errLockWait = fmt.Errorf("another collie process has been refreshing the agent session for over %s; the lock is never broken while its holder runs, so try again", LockWait)

type refreshRequest struct {
	Schema       string `json:"schema"`
	RefreshToken string `json:"refresh_token"`
}

// Session returns the stored session, or ErrNoSession with the login fix.
func (c *Client) Session() (loginstore.Record, error) {
	rec, ok := loginstore.Read(c.Env, c.Service)
	if !ok {
		return loginstore.Record{}, loginAgain("", ErrNoSession)
	}
	// Tokens go only to a bridge URL login would have taken (K2); a store
	// written by hand or by another tool may hold anything.
	base, err := CheckBase(rec.APIBase)
	if err != nil {
		return loginstore.Record{}, loginAgain("", fmt.Errorf("the stored session's api_base is not a bridge URL collie uses: %w", err))
	}
	rec.APIBase = base
	return rec, nil
}

// Access returns the stored session with an access token good for at
// least RefreshSkew more, refreshing it first when it is not (R8).
func (c *Client) Access(ctx context.Context) (loginstore.Record, error) {
	rec, err := c.Session()
	if err != nil {
		return rec, err
	}
	if c.fresh(rec) {
		return rec, nil
	}
	return c.refresh(ctx, rec, false)
}

// AfterUnauthorized is what to do when the bridge answered 401 to the
// access token failed: reload the store, and if another process stored a
// new session meanwhile, use it; otherwise refresh once (R8).
func (c *Client) AfterUnauthorized(ctx context.Context, failed string) (loginstore.Record, error) {
	rec, err := c.Session()
	if err != nil {
		return rec, err
	}
	if rec.AccessToken != failed && c.fresh(rec) {
		return rec, nil
	}
	return c.refresh(ctx, rec, true)
}

// fresh reports whether rec's access token is good for RefreshSkew more.
func (c *Client) fresh(rec loginstore.Record) bool {
	return rec.AccessExpiry().Sub(c.now()) > RefreshSkew
}

// refresh is the single flight: under the lock, reload the store; a
// refresh token other than baseline's means another process refreshed,
// and its session is used; otherwise rotate (unless, not forced, the
// session turned fresh meanwhile).
func (c *Client) refresh(ctx context.Context, baseline loginstore.Record, force bool) (loginstore.Record, error) {
	dir, err := loginstore.Dir(c.Env, c.Service)
	if err != nil {
		return loginstore.Record{}, fmt.Errorf("the agent session's folder: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, LockWait)
	defer cancel()
	release, err := takeLock(lctx, filepath.Join(dir, LockName))
	if err != nil {
		return loginstore.Record{}, err
	}
	defer release()
	cur, err := c.Session()
	if err != nil {
		return cur, err
	}
	if cur.RefreshToken != baseline.RefreshToken {
		return cur, nil
	}
	if !force && c.fresh(cur) {
		return cur, nil
	}
	if t, ok := cur.RefreshExpiry(); ok && !t.After(c.now()) {
		return loginstore.Record{}, loginAgain(cur.APIBase, errors.New("the agent session's refresh token expired"))
	}
	rec, err := c.tokenRequest(ctx, cur.APIBase, RefreshPath, refreshRequest{SchemaRefresh, cur.RefreshToken}, "the refresh")
	var re *RefusedError
	if errors.As(err, &re) && re.Terminal() {
		return loginstore.Record{}, loginAgain(cur.APIBase, fmt.Errorf("the agent session ended: %w", err))
	}
	if err != nil && hint.Of(err) == "" {
		err = hint.Wrap(err, "try again; if it keeps failing, "+LoginHint(cur.APIBase))
	}
	return rec, err
}

func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
