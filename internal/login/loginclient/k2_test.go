package loginclient

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// k2Trap is a listener on 127.0.0.2, an address K2 never sends a token
// to over plain http://, that counts every connection it is offered.
type k2Trap struct {
	base  string
	conns atomic.Int32
}

func newK2Trap(t *testing.T) *k2Trap {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		testenv.Unavailablef(t, "no 127.0.0.2 on this machine (Linux routes all of 127.0.0.0/8 to loopback): %v", err)
	}
	trap := &k2Trap{base: "http://" + l.Addr().String()}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			trap.conns.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return trap
}

// TestCredentialsGoOnlyToK2Addresses_K2_R9: a stored api_base that login
// would never have taken (http:// to a machine other than 127.0.0.1 or
// localhost: a session file edited, or written by another tool sharing the
// store) receives nothing from any request that carries a credential:
// logout's revocation, the refresh, the agent API, the retry after a 401,
// and a login given such an address. Logout still removes the local
// session and says the bridge was not told.
func TestCredentialsGoOnlyToK2Addresses_K2_R9(t *testing.T) {
	trap := newK2Trap(t)
	seed := func(t *testing.T, env loginstore.Env, accessExp time.Time) loginstore.Record {
		t.Helper()
		s := loginstore.Session{Schema: loginstore.Schema, TokenType: "Bearer", AccessToken: "ACCESS-" + strings.Repeat("a", 20),
			AccessExpiresAt: accessExp.UTC().Format(time.RFC3339), RefreshToken: "REFRESH-" + strings.Repeat("r", 20)}
		if _, err := loginstore.Write(env, Service, s, trap.base, time.Now()); err != nil {
			t.Fatal(err)
		}
		rec, _ := loginstore.Read(env, Service)
		return rec
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *Client, rec loginstore.Record) error
	}{
		{"logout", func(t *testing.T, c *Client, _ loginstore.Record) error {
			res, err := c.Logout(context.Background())
			if err != nil || !res.Removed {
				t.Fatalf("Logout = %+v, %v: the local session must go all the same", res, err)
			}
			if _, ok := loginstore.Read(c.Env, Service); ok {
				t.Fatal("the local session is still there")
			}
			return res.Revoke
		}},
		{"refresh", func(t *testing.T, c *Client, rec loginstore.Record) error {
			_, err := c.refresh(context.Background(), rec, true)
			return err
		}},
		{"access before expiry", func(t *testing.T, c *Client, _ loginstore.Record) error {
			_, err := c.Access(context.Background())
			return err
		}},
		{"agent API", func(t *testing.T, c *Client, _ loginstore.Record) error {
			req, _ := http.NewRequest(http.MethodPost, "http://ignored"+wire.AskPath, strings.NewReader(`{"title":"q"}`))
			resp, err := c.HTTPClient().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"agent API's transport with a base it was given", func(t *testing.T, c *Client, rec loginstore.Record) error {
			req, _ := http.NewRequest(http.MethodPost, "http://ignored"+wire.AskPath, strings.NewReader(`{"title":"q"}`))
			resp, err := (&Transport{Client: c}).send(req, rec.APIBase, rec.AccessToken)
			if err == nil {
				resp.Body.Close()
			}
			return err
		}},
		{"revocation post", func(t *testing.T, c *Client, rec loginstore.Record) error {
			_, _, err := c.post(context.Background(), rec.APIBase, RevokePath, revokeRequest{SchemaRevoke, rec.RefreshToken}, rec.AccessToken)
			return err
		}},
		{"login", func(t *testing.T, c *Client, _ loginstore.Record) error {
			_, err := c.Login(context.Background(), trap.base)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, _ := agentEnv(t)
			rec := seed(t, env, time.Now().Add(-time.Minute))
			before := trap.conns.Load()
			err := tc.run(t, New(env), rec)
			if err == nil {
				t.Fatal("no error: the request was not refused")
			}
			if n := trap.conns.Load() - before; n != 0 {
				t.Fatalf("%d connection(s) reached %s", n, trap.base)
			}
			if strings.Contains(errText(err), rec.AccessToken) || strings.Contains(errText(err), rec.RefreshToken) {
				t.Fatalf("a credential in the error: %s", errText(err))
			}
		})
	}
}
