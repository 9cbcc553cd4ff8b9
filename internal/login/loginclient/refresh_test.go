package loginclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

func askOnce(t *testing.T, c *Client) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://ignored"+wire.AskPath, strings.NewReader(`{"title":"q"}`))
	resp, err := c.HTTPClient().Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

// TestRefreshRotation_R8: an access token within 60 s of its expiry is
// refreshed before the request; both tokens rotate and are stored; one a
// second past the window is not.
func TestRefreshRotation_R8(t *testing.T) {
	for _, tc := range []struct {
		name    string
		left    time.Duration
		refresh bool
	}{{"expired", -time.Minute, true}, {"within_60s", 59 * time.Second, true}, {"outside_60s", 65 * time.Second, false}} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := agentEnv(t)
			b := newBridge(t)
			old := b.seed(env, time.Now().Add(tc.left))
			c := New(env)
			resp, err := askOnce(t, c)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("ask: %v %v", resp, errText(err))
			}
			_, refreshes, asks := b.counts()
			now, _ := loginstore.Read(env, Service)
			if !tc.refresh {
				if refreshes != 0 || now.AccessToken != old.AccessToken {
					t.Fatalf("refreshed %d times with %s left", refreshes, tc.left)
				}
				return
			}
			if refreshes != 1 || asks != 1 {
				t.Fatalf("refreshes %d, asks %d", refreshes, asks)
			}
			if now.AccessToken == old.AccessToken || now.RefreshToken == old.RefreshToken {
				t.Fatal("the tokens did not rotate")
			}
			if b.askTokens[0] != now.AccessToken {
				t.Fatal("the request did not carry the new access token")
			}
		})
	}
}

// TestUnauthorizedRetriesOnce_R8: a 401 makes one reload-and-refresh and
// one retry; a second 401 fails closed with the login fix, never a third
// request.
func TestUnauthorizedRetriesOnce_R8(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	rec := b.seed(env, time.Now().Add(time.Hour))
	b.failAccess[rec.AccessToken] = true
	c := New(env)
	resp, err := askOnce(t, c)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("ask after one 401: %v", errText(err))
	}
	if _, refreshes, asks := b.counts(); refreshes != 1 || asks != 1 {
		t.Fatalf("refreshes %d, asks %d", refreshes, asks)
	}

	// Every access token refused: one refresh, one retry, then fail closed.
	var calls atomic.Int32
	b.override[AgentAPIPrefix+wire.AskPath] = func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b.fail(w, 401, "invalid")
	}
	_, err = askOnce(t, c)
	if err == nil || !strings.Contains(errText(err), "collie login --url "+b.url()) {
		t.Fatalf("ask = %v, want the login fix", errText(err))
	}
	if calls.Load() != 2 {
		t.Fatalf("the agent API was asked %d times, want 2", calls.Load())
	}
	if _, refreshes, _ := b.counts(); refreshes != 2 {
		t.Fatalf("refreshes %d, want 2 (one per command)", refreshes)
	}
	b.noSecrets(t, errText(err))
}

// TestAfterUnauthorizedUsesNewerSession_R8: after a 401, a session another
// process stored meanwhile is used without a refresh.
func TestAfterUnauthorizedUsesNewerSession_R8(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	old := b.seed(env, time.Now().Add(time.Hour))
	newer := b.seed(env, time.Now().Add(time.Hour))
	got, err := New(env).AfterUnauthorized(context.Background(), old.AccessToken)
	if err != nil || got.AccessToken != newer.AccessToken {
		t.Fatalf("AfterUnauthorized = %v", errText(err))
	}
	if _, refreshes, _ := b.counts(); refreshes != 0 {
		t.Fatal("refreshed although another process had")
	}
}

// TestRefreshFailsClosed_R8_R13: a refresh token that is expired (known
// locally, no request), reused (the chain revoked), or unknown fails
// closed with "run collie login --url BASE again"; a login then recovers.
func TestRefreshFailsClosed_R8_R13(t *testing.T) {
	t.Run("expired_locally", func(t *testing.T) {
		env, _ := agentEnv(t)
		b := newBridge(t)
		rec := b.seed(env, time.Now().Add(-time.Minute))
		past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
		rec.RefreshExpiresAt = &past
		loginstore.Write(env, Service, rec.Session, b.url(), time.Now())
		_, err := New(env).Access(context.Background())
		if err == nil || !strings.Contains(errText(err), "run `collie login --url "+b.url()+"` again") {
			t.Fatalf("Access = %v", errText(err))
		}
		if _, refreshes, _ := b.counts(); refreshes != 0 {
			t.Fatal("an expired refresh token was sent")
		}
	})
	t.Run("reused_revokes_chain", func(t *testing.T) {
		env, transport := agentEnv(t)
		b := newBridge(t)
		b.argsFile = filepath.Join(transport, "args")
		stale := b.seed(env, time.Now().Add(-time.Minute))
		c := New(env)
		if _, err := c.Access(context.Background()); err != nil {
			t.Fatal(errText(err))
		}
		// The stale session comes back (a backup restored): its refresh
		// token was rotated away, and using it again revokes the chain.
		loginstore.Write(env, Service, stale.Session, b.url(), time.Now())
		_, err := c.Access(context.Background())
		if err == nil || !strings.Contains(errText(err), "collie login --url") || !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("Access with a reused refresh token = %v", errText(err))
		}
		b.noSecrets(t, errText(err))
		// Recovery: a new login.
		writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
		if _, err := c.Login(context.Background(), b.url()); err != nil {
			t.Fatal(errText(err))
		}
		if resp, err := askOnce(t, c); err != nil || resp.StatusCode != 200 {
			t.Fatalf("ask after a new login: %v", errText(err))
		}
	})
	t.Run("stored_api_base_not_K2", func(t *testing.T) {
		env, _ := agentEnv(t)
		b := newBridge(t)
		rec := b.seed(env, time.Now().Add(time.Hour))
		loginstore.Write(env, Service, rec.Session, "http://10.1.2.3:80", time.Now())
		_, err := New(env).Access(context.Background())
		if err == nil || !strings.Contains(errText(err), "collie login --url") {
			t.Fatalf("Access = %v", errText(err))
		}
	})
	t.Run("no_session", func(t *testing.T) {
		env, _ := agentEnv(t)
		_, err := New(env).Access(context.Background())
		if !errors.Is(err, ErrNoSession) || !strings.Contains(errText(err), "collie login --url") {
			t.Fatalf("Access = %v", errText(err))
		}
	})
}

// TestTokenEndpointRedirectRefused_R9: a redirect from a token endpoint is
// refused: the credential never reaches the other server.
func TestTokenEndpointRedirectRefused_R9(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	for _, status := range []int{301, 302, 303, 307, 308} {
		env, _ := agentEnv(t)
		b := newBridge(t)
		b.seed(env, time.Now().Add(-time.Minute))
		b.override[RefreshPath] = func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+RefreshPath, status)
		}
		before, _ := os.ReadFile(mustPath(t, env))
		_, err := New(env).Access(context.Background())
		if err == nil || !strings.Contains(err.Error(), "redirect") {
			t.Fatalf("%d: Access = %v", status, errText(err))
		}
		after, _ := os.ReadFile(mustPath(t, env))
		if string(before) != string(after) {
			t.Fatalf("%d: the session changed", status)
		}
	}
	if elsewhere.Load() != 0 {
		t.Fatalf("the redirect was followed %d times", elsewhere.Load())
	}
}

func mustPath(t *testing.T, e loginstore.Env) string {
	p, err := loginstore.Path(e, Service)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTokenEndpointBodyCap_R9: a reply over 64 KiB is refused, whether it
// says so in Content-Length or not, and nothing is stored.
func TestTokenEndpointBodyCap_R9(t *testing.T) {
	big := `{"schema":"` + strings.Repeat("x", MaxTokenReply) + `"}`
	for _, chunked := range []bool{false, true} {
		env, _ := agentEnv(t)
		b := newBridge(t)
		b.seed(env, time.Now().Add(-time.Minute))
		b.override[RefreshPath] = func(w http.ResponseWriter, r *http.Request) {
			if chunked {
				w.Write([]byte(big[:100]))
				w.(http.Flusher).Flush()
				w.Write([]byte(big[100:]))
				return
			}
			w.Write([]byte(big))
		}
		before, _ := os.ReadFile(mustPath(t, env))
		_, err := New(env).Access(context.Background())
		if err == nil || !strings.Contains(err.Error(), "64 KiB") {
			t.Fatalf("chunked %v: Access = %v", chunked, errText(err))
		}
		after, _ := os.ReadFile(mustPath(t, env))
		if string(before) != string(after) {
			t.Fatal("the session changed")
		}
	}
}

// stallingTransport answers with headers at once and a body that never
// comes: its Read blocks until the request's context ends.
type stallingTransport struct{}

func (stallingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: stallingBody{r.Context()}, Request: r}, nil
}

type stallingBody struct{ ctx context.Context }

func (b stallingBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}
func (stallingBody) Close() error { return nil }

// TestTokenEndpointSlowBody_R9: a body that never ends is cut at the one
// 20 s deadline over the whole token request, and nothing is stored.
func TestTokenEndpointSlowBody_R9(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	b.seed(env, time.Now().Add(-time.Minute))
	before, _ := os.ReadFile(mustPath(t, env))
	real := time.Now()
	synctest.Test(t, func(t *testing.T) {
		c := New(env)
		c.Now = func() time.Time { return real } // the session's times are real ones; the bubble's clock starts in 2000
		c.HTTP = &http.Client{Transport: stallingTransport{}}
		start := time.Now()
		_, err := c.Access(context.Background())
		if err == nil || !strings.Contains(err.Error(), "within 20s") {
			t.Fatalf("Access = %v", errText(err))
		}
		if d := time.Since(start); d != TokenDeadline {
			t.Fatalf("ended after %s, want exactly %s", d, TokenDeadline)
		}
	})
	after, _ := os.ReadFile(mustPath(t, env))
	if string(before) != string(after) {
		t.Fatal("the session changed")
	}
}

// TestRefreshUnknownFieldRefused_R9: a refresh reply with a member beyond
// the six is refused and nothing is stored.
func TestRefreshUnknownFieldRefused_R9(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	b.seed(env, time.Now().Add(-time.Minute))
	b.override[RefreshPath] = sessionReplying(b, func(m map[string]any) { m["extra"] = true })
	before, _ := os.ReadFile(mustPath(t, env))
	if _, err := New(env).Access(context.Background()); err == nil || !strings.Contains(err.Error(), "not in the schema") {
		t.Fatalf("Access = %v", errText(err))
	}
	after, _ := os.ReadFile(mustPath(t, env))
	if string(before) != string(after) {
		t.Fatal("the session changed")
	}
}

// TestLockNeverBroken_R9: while another holder keeps the lock, a refresh
// waits and gives up without breaking it, however long it was held; the
// lock file stays, and says who holds it.
func TestLockNeverBroken_R9(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	b.seed(env, time.Now().Add(-time.Minute))
	dir, _ := loginstore.Dir(env, Service)
	lock := filepath.Join(dir, LockName)
	release, err := takeLock(context.Background(), lock)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(lock)
	if !strings.Contains(string(data), "pid ") || !strings.Contains(string(data), "id ") {
		t.Fatalf("the lock file says %q", data)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := New(env).Access(ctx)
		done <- err
	}()
	cancel() // the holder is still running: the waiter gives up, never breaks it
	if err := <-done; !errors.Is(err, errLockWait) {
		t.Fatalf("Access = %v", errText(err))
	}
	if _, refreshes, _ := b.counts(); refreshes != 0 {
		t.Fatal("refreshed while another held the lock")
	}
	release()
	if _, err := New(env).Access(context.Background()); err != nil {
		t.Fatal(errText(err))
	}
	if fi, err := os.Stat(lock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the lock file: %v %v", fi, err)
	}
}

// TestLogout_R6: logout removes only auth.json and revokes; with the
// bridge down it still logs out locally and says why it could not revoke.
func TestLogout_R6(t *testing.T) {
	env, _ := agentEnv(t)
	b := newBridge(t)
	b.seed(env, time.Now().Add(time.Hour))
	res, err := New(env).Logout(context.Background())
	if err != nil || !res.Removed || res.Revoke != nil || b.revokes != 1 {
		t.Fatalf("Logout = %+v, %v (revokes %d)", res, err, b.revokes)
	}
	if _, ok := loginstore.Read(env, Service); ok {
		t.Fatal("the session is still there")
	}
	dir, _ := loginstore.Dir(env, Service)
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("the service folder went too")
	}

	b.seed(env, time.Now().Add(time.Hour))
	b.srv.Close()
	res, err = New(env).Logout(context.Background())
	if err != nil || !res.Removed || res.Revoke == nil {
		t.Fatalf("Logout with the bridge down = %+v, %v", res, err)
	}
	b.noSecrets(t, res.Revoke.Error())
}
