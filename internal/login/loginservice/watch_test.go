package loginservice

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// ended reports whether ctx ended, and with which cause.
func ended(ctx context.Context) (bool, error) {
	select {
	case <-ctx.Done():
		return true, context.Cause(ctx)
	default:
		return false, nil
	}
}

// TestWatchEndsAtEveryRevocation_R8: whatever a session authorised runs
// under Watch, which ends the moment the session is revoked, by every way
// there is to revoke one; a refresh (the same session, new tokens) does
// not end it.
func TestWatchEndsAtEveryRevocation_R8(t *testing.T) {
	for _, tc := range []struct {
		name   string
		revoke func(f *fixture, tok Tokens) Tokens // returns the tokens to check the watch of
	}{
		{"logout by refresh token", func(f *fixture, tok Tokens) Tokens { f.s.Revoke(tok.Refresh, ""); return tok }},
		{"logout by access token", func(f *fixture, tok Tokens) Tokens { f.s.Revoke("", tok.Access); return tok }},
		{"the user, by agent id", func(f *fixture, tok Tokens) Tokens { f.s.RevokeAgent(alice.Agent); return tok }},
		{"a newer login", func(f *fixture, tok Tokens) Tokens { f.login(alice); return tok }},
		{"a reused refresh token", func(f *fixture, tok Tokens) Tokens {
			if _, err := f.s.Refresh(tok.Refresh); err != nil {
				f.t.Fatal(err)
			}
			f.s.Refresh(tok.Refresh) // reuse: the chain goes
			return tok
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tok := f.login(alice)
			other := f.login(bob)
			sess, _ := f.s.Authenticate(tok.Access)
			bobSess, _ := f.s.Authenticate(other.Access)
			ctx, stop := f.s.Watch(context.Background(), sess.Chain)
			defer stop()
			bobCtx, bobStop := f.s.Watch(context.Background(), bobSess.Chain)
			defer bobStop()
			tc.revoke(f, tok)
			if done, cause := ended(ctx); !done || !errors.Is(cause, ErrRevoked) {
				t.Fatalf("the watch of the revoked session: ended %v, cause %v", done, cause)
			}
			if done, _ := ended(bobCtx); done {
				t.Fatal("another agent's watch ended")
			}
			// Watching a revoked session ends at once.
			late, lateStop := f.s.Watch(context.Background(), sess.Chain)
			defer lateStop()
			if done, _ := ended(late); !done {
				t.Fatal("a watch of a revoked session did not end at once")
			}
		})
	}
	t.Run("refresh is no revocation", func(t *testing.T) {
		f := newFixture(t)
		tok := f.login(alice)
		sess, _ := f.s.Authenticate(tok.Access)
		ctx, stop := f.s.Watch(context.Background(), sess.Chain)
		defer stop()
		if _, err := f.s.Refresh(tok.Refresh); err != nil {
			t.Fatal(err)
		}
		if done, _ := ended(ctx); done {
			t.Fatal("a refresh ended the watch")
		}
		stop()
		if n := len(f.s.watches); n != 0 {
			t.Fatalf("%d watches kept after stop", n)
		}
	})
}

// TestWatchAgent_R5: an agent's watch (its board's) ends when it has no
// live session left: at its last revocation, and at the first write after
// its last session expired; not while a session of it is live.
func TestWatchAgent_R5(t *testing.T) {
	f := newFixture(t)
	f.login(alice)
	ctx, stop := f.s.WatchAgent(context.Background(), alice.Key())
	defer stop()
	f.login(alice) // replaces the session: the agent still has one
	if done, _ := ended(ctx); done {
		t.Fatal("a new login ended the agent's watch")
	}
	f.s.RevokeAgent(alice.Agent)
	if done, cause := ended(ctx); !done || !errors.Is(cause, ErrAgentEnded) {
		t.Fatalf("after its revocation: ended %v, cause %v", done, cause)
	}

	f.login(bob)
	bobCtx, bobStop := f.s.WatchAgent(context.Background(), bob.Key())
	defer bobStop()
	f.clock.Add(loginwire.RefreshTTL + time.Second)
	if done, _ := ended(bobCtx); done {
		t.Fatal("ended before any write")
	}
	f.grant(alice) // any write
	if done, cause := ended(bobCtx); !done || !errors.Is(cause, ErrAgentEnded) {
		t.Fatalf("after its session expired: ended %v, cause %v", done, cause)
	}
	none, noneStop := f.s.WatchAgent(context.Background(), AgentKey{Server: "srv.9", Agent: "nobody"})
	defer noneStop()
	if done, _ := ended(none); !done {
		t.Fatal("the watch of an agent without a session did not end at once")
	}
}
