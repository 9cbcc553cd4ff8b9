package loginservice

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// TestRefreshRotation_R8_R13: a refresh mints both tokens anew with fresh
// lifetimes; the old access token stops working at once, the new one works.
func TestRefreshRotation_R8_R13(t *testing.T) {
	f := newFixture(t)
	tok := f.login(alice)
	f.clock.Add(14 * time.Minute)
	tok2, err := f.s.Refresh(tok.Refresh)
	wantCode(t, err, "")
	now := epoch.Add(14 * time.Minute)
	if tok2.Access == tok.Access || tok2.Refresh == tok.Refresh {
		t.Fatal("a refresh did not rotate both tokens")
	}
	if !tok2.AccessExpires.Equal(now.Add(loginwire.AccessTTL)) || !tok2.RefreshExpires.Equal(now.Add(loginwire.RefreshTTL)) {
		t.Fatalf("expiries %v %v", tok2.AccessExpires, tok2.RefreshExpires)
	}
	_, err = f.s.Authenticate(tok.Access)
	wantCode(t, err, loginwire.CodeInvalid)
	sess, err := f.s.Authenticate(tok2.Access)
	wantCode(t, err, "")
	c := f.s.List()[0]
	if sess.Chain != c.ID || !c.Refreshed.Equal(now) || !c.Created.Equal(epoch) || !c.Revoked.IsZero() {
		t.Fatalf("chain %+v, session %+v", c, sess)
	}
	// A token of the wrong kind is never accepted for the other.
	_, err = f.s.Refresh(tok2.Access)
	wantCode(t, err, loginwire.CodeInvalid)
	_, err = f.s.Authenticate(tok2.Refresh)
	wantCode(t, err, loginwire.CodeInvalid)
	if !f.s.List()[0].Revoked.IsZero() {
		t.Fatal("a wrong-kind token revoked the chain")
	}
}

// TestTokenExpiry_R8_R13: an access token works until 15 min after its
// mint and a refresh token until 30 days after, to the second.
func TestTokenExpiry_R8_R13(t *testing.T) {
	for _, c := range []struct {
		name         string
		after        time.Duration
		auth, refrsh string
	}{
		{"fresh", 0, "", ""},
		{"access 14m59s", 15*time.Minute - time.Second, "", ""},
		{"access 15m", 15 * time.Minute, loginwire.CodeExpired, ""},
		{"refresh 30d-1s", loginwire.RefreshTTL - time.Second, loginwire.CodeExpired, ""},
		{"refresh 30d", loginwire.RefreshTTL, loginwire.CodeExpired, loginwire.CodeExpired},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			tok := f.login(alice)
			f.clock.Add(c.after)
			_, err := f.s.Authenticate(tok.Access)
			wantCode(t, err, c.auth)
			_, err = f.s.Refresh(tok.Refresh)
			wantCode(t, err, c.refrsh)
		})
	}
}

// TestRefreshReuse_R8_R13: presenting a rotated-away refresh token revokes
// the whole chain (the thief's and the owner's tokens alike), across a
// restart; an unknown or revoked one is invalid.
func TestRefreshReuse_R8_R13(t *testing.T) {
	f := newFixture(t)
	other := f.login(bob)
	tok := f.login(alice)
	tok2, err := f.s.Refresh(tok.Refresh)
	wantCode(t, err, "")
	f.restart()
	_, err = f.s.Refresh(tok.Refresh)
	wantCode(t, err, loginwire.CodeInvalid)
	f.restart()
	for _, c := range f.s.List() {
		switch c.Identity {
		case alice:
			if c.Revoked.IsZero() || c.RevokedWhy != WhyReuse {
				t.Fatalf("after reuse the chain is %+v", c)
			}
		case bob:
			if !c.Revoked.IsZero() {
				t.Fatal("reuse revoked another agent's chain")
			}
		}
	}
	_, err = f.s.Authenticate(tok2.Access)
	wantCode(t, err, loginwire.CodeInvalid)
	_, err = f.s.Refresh(tok2.Refresh)
	wantCode(t, err, loginwire.CodeInvalid)
	_, err = f.s.Refresh("collie_r_" + strings.Repeat("x", 43))
	wantCode(t, err, loginwire.CodeInvalid)
	_, err = f.s.Authenticate(other.Access)
	wantCode(t, err, "")
}

// TestRotatedKept_R8: a chain keeps its last 64 rotated-away refresh
// tokens: the 64th-last is still reuse, an older one is merely unknown.
func TestRotatedKept_R8(t *testing.T) {
	f := newFixture(t)
	tok := f.login(alice)
	var old []string
	for range 70 {
		old = append(old, tok.Refresh)
		var err error
		if tok, err = f.s.Refresh(tok.Refresh); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.s.st.chains[f.s.List()[0].ID].Rotated); n != maxRotated {
		t.Fatalf("%d rotated digests kept, want %d", n, maxRotated)
	}
	_, err := f.s.Refresh(old[5]) // the 65th-last: forgotten
	wantCode(t, err, loginwire.CodeInvalid)
	if !f.s.List()[0].Revoked.IsZero() {
		t.Fatal("a forgotten token revoked the chain")
	}
	_, err = f.s.Refresh(old[6]) // the 64th-last: reuse
	wantCode(t, err, loginwire.CodeInvalid)
	if f.s.List()[0].RevokedWhy != WhyReuse {
		t.Fatal("reuse of the 64th-last rotated token was not detected")
	}
}

// TestRefreshWriteFailure_R8: a rotation that cannot be saved is undone:
// the presented refresh token still works afterwards.
func TestRefreshWriteFailure_R8(t *testing.T) {
	f := newFixture(t)
	tok := f.login(alice)
	fail := true
	failingWrite(f.s, &fail)
	_, err := f.s.Refresh(tok.Refresh)
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	_, err = f.s.Authenticate(tok.Access)
	wantCode(t, err, "")
	fail = false
	if _, err := f.s.Refresh(tok.Refresh); err != nil {
		t.Fatalf("the refresh token did not survive a failed write: %v", err)
	}
}

// TestConcurrentRefresh_R8_R13: twenty refreshes with one token at once:
// exactly one wins, the others are invalid, and the chain is revoked,
// because the second presentation is reuse. (The CLI's flock single
// flight keeps honest clients from this.)
func TestConcurrentRefresh_R8_R13(t *testing.T) {
	f := newFixture(t)
	tok := f.login(alice)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() { _, errs[i] = f.s.Refresh(tok.Refresh) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		wantCode(t, err, loginwire.CodeInvalid)
	}
	if wins != 1 {
		t.Fatalf("%d refreshes won, want 1", wins)
	}
	if c := f.s.List()[0]; c.RevokedWhy != WhyReuse {
		t.Fatalf("chain %+v, want revoked for reuse", c)
	}
}

// TestRevoke_R8_R13: logout revokes the chain a refresh token (current or
// rotated) or an access token belongs to; unknown tokens are no error.
func TestRevoke_R8_R13(t *testing.T) {
	cases := []struct {
		name    string
		present func(first, cur Tokens) (string, string)
		revoked bool
	}{
		{"current refresh", func(_, cur Tokens) (string, string) { return cur.Refresh, "" }, true},
		{"rotated refresh", func(first, _ Tokens) (string, string) { return first.Refresh, "" }, true},
		{"access", func(_, cur Tokens) (string, string) { return "", cur.Access }, true},
		{"both", func(_, cur Tokens) (string, string) { return cur.Refresh, cur.Access }, true},
		{"neither", func(Tokens, Tokens) (string, string) { return "", "" }, false},
		{"unknown", func(Tokens, Tokens) (string, string) { return "collie_r_" + strings.Repeat("y", 43), "junk" }, false},
		{"swapped kinds", func(_, cur Tokens) (string, string) { return cur.Access, cur.Refresh }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			first := f.login(alice)
			cur, err := f.s.Refresh(first.Refresh)
			wantCode(t, err, "")
			ok, err := f.s.Revoke(c.present(first, cur))
			wantCode(t, err, "")
			if ok != c.revoked {
				t.Fatalf("Revoke = %v, want %v", ok, c.revoked)
			}
			f.restart()
			_, err = f.s.Authenticate(cur.Access)
			if c.revoked {
				wantCode(t, err, loginwire.CodeInvalid)
				_, err = f.s.Refresh(cur.Refresh)
				wantCode(t, err, loginwire.CodeInvalid)
				if ch := f.s.List()[0]; ch.RevokedWhy != WhyLogout || !ch.Revoked.Equal(epoch) {
					t.Fatalf("chain %+v", ch)
				}
				if ok, _ := f.s.Revoke(c.present(first, cur)); ok {
					t.Fatal("revoking twice reported a revocation")
				}
			} else {
				wantCode(t, err, "")
			}
		})
	}
}

// TestRevokeWriteFailure_R8: a revocation holds in memory when the store
// cannot be written, and the error says so.
func TestRevokeWriteFailure_R8(t *testing.T) {
	f := newFixture(t)
	tok := f.login(alice)
	fail := true
	failingWrite(f.s, &fail)
	ok, err := f.s.Revoke(tok.Refresh, "")
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	if !ok {
		t.Fatal("not revoked")
	}
	_, err = f.s.Authenticate(tok.Access)
	wantCode(t, err, loginwire.CodeInvalid)
	fail = false
	f.login(bob) // the next write saves the revocation too
	f.restart()
	_, err = f.s.Authenticate(tok.Access)
	wantCode(t, err, loginwire.CodeInvalid)
}

// TestRevokeAgent_R13: the human revokes by chain id or by agent id; a
// name that matches no live chain is an error saying how to list them,
// and a pasted token is never echoed.
func TestRevokeAgent_R13(t *testing.T) {
	f := newFixture(t)
	a1 := f.login(alice)
	a2 := f.login(Identity{Agent: alice.Agent, Server: "srv.2", App: alice.App}) // the same id on another server
	b := f.login(bob)
	sb, _ := f.s.Authenticate(b.Access)
	n, err := f.s.RevokeAgent(sb.Chain)
	if n != 1 || err != nil {
		t.Fatalf("by chain id: %d, %v", n, err)
	}
	n, err = f.s.RevokeAgent(alice.Agent)
	if n != 2 || err != nil {
		t.Fatalf("by agent id: %d, %v", n, err)
	}
	f.restart()
	for _, tok := range []Tokens{a1, a2, b} {
		_, err := f.s.Authenticate(tok.Access)
		wantCode(t, err, loginwire.CodeInvalid)
	}
	for _, c := range f.s.List() {
		if c.RevokedWhy != WhyUser {
			t.Fatalf("chain %+v", c)
		}
	}
	for _, id := range []string{alice.Agent, "nobody", a1.Refresh, "", "a\x1b[31m"} {
		n, err := f.s.RevokeAgent(id)
		wantCode(t, err, loginwire.CodeInvalid)
		if n != 0 || !strings.Contains(err.Error(), "list them with: collie agents list") {
			t.Fatalf("%d, %v", n, err)
		}
		if id != "" && strings.Contains(err.Error(), id) != (id == alice.Agent || id == "nobody") {
			t.Fatalf("message %q for %q", err, id)
		}
	}
}

// TestNewLoginReplacesOld_R5: an agent has one live session: each login
// revokes the agent's sessions before it as "a newer login" at once (three
// logins leave one live), also when its app was installed again; other
// agents, and the same agent id on another server, are untouched.
func TestNewLoginReplacesOld_R5(t *testing.T) {
	f := newFixture(t)
	var toks []Tokens
	bobTok := f.login(bob)
	for range 3 {
		toks = append(toks, f.login(alice))
		f.clock.Add(time.Second)
	}
	for _, tok := range toks[:2] {
		_, err := f.s.Authenticate(tok.Access)
		wantCode(t, err, loginwire.CodeInvalid)
		_, err = f.s.Refresh(tok.Refresh)
		wantCode(t, err, loginwire.CodeInvalid)
	}
	for _, tok := range []Tokens{toks[2], bobTok} {
		_, err := f.s.Authenticate(tok.Access)
		wantCode(t, err, "")
	}
	list := f.s.List()
	live := map[string]int{}
	for _, c := range list {
		if c.Revoked.IsZero() {
			live[c.Identity.Agent]++
		} else if c.RevokedWhy != WhyNewerLogin || c.Identity != alice {
			t.Fatalf("chain %+v: only alice's older logins should be revoked, as a newer login", c)
		}
	}
	if len(list) != 4 || live[alice.Agent] != 1 || live[bob.Agent] != 1 {
		t.Fatalf("%d chains, live %v; want 4 chains, one live each", len(list), live)
	}
	for i := 1; i < len(list); i++ {
		if list[i].Created.After(list[i-1].Created) {
			t.Fatal("List is not newest first")
		}
	}
	if !strings.Contains(f.logs.String(), "revoked an agent session for a newer login") {
		t.Fatalf("no log line for the replaced sessions:\n%s", f.logs)
	}
	// The same agent id on another server is another agent.
	f.login(Identity{Agent: alice.Agent, Server: "srv.2", App: alice.App})
	_, err := f.s.Authenticate(toks[2].Access)
	wantCode(t, err, "")
	// The app installed again: the same agent, so the login replaces it.
	f.login(Identity{Agent: alice.Agent, Server: alice.Server, App: "inst_43"})
	_, err = f.s.Authenticate(toks[2].Access)
	wantCode(t, err, loginwire.CodeInvalid)
}

// TestPrune_R5_R8: ended chains are dropped 7 days after they ended, at a
// write; live ones are kept.
func TestPrune_R5_R8(t *testing.T) {
	f := newFixture(t)
	revoked := f.login(alice)
	f.s.Revoke(revoked.Refresh, "")
	f.clock.Add(time.Hour)
	f.login(bob) // expires at 1h + 30 days
	week := 7 * 24 * time.Hour
	f.clock.Set(epoch.Add(week - time.Second))
	f.login(Identity{Agent: "carol", Server: "s", App: "a"})
	if n := len(f.s.List()); n != 3 {
		t.Fatalf("%d chains, want 3 before a week", n)
	}
	f.clock.Set(epoch.Add(week))
	f.grant(alice)
	if n := len(f.s.List()); n != 2 {
		t.Fatalf("%d chains, want the revoked one dropped after a week", n)
	}
	f.clock.Set(epoch.Add(time.Hour + loginwire.RefreshTTL + week - time.Second))
	f.grant(alice)
	if n := len(f.s.List()); n != 2 {
		t.Fatalf("%d chains, want 2", n)
	}
	f.clock.Add(time.Second)
	f.grant(alice)
	if n := len(f.s.List()); n != 1 {
		t.Fatalf("%d chains, want the expired one dropped a week after its end", n)
	}
	f.restart()
	if n := len(f.s.List()); n != 1 {
		t.Fatalf("%d chains after a restart", n)
	}
}

// TestRestart_R5_R8: every grant, chain, rotation and revocation survives
// Open again.
func TestRestart_R5_R8(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	tok := f.login(bob)
	revokedTok := f.login(Identity{Agent: "carol", Server: "s", App: "a"})
	f.s.Revoke("", revokedTok.Access)
	before := f.s.List()
	f.restart()
	after := f.s.List()
	if len(before) != len(after) {
		t.Fatal("chains lost")
	}
	for i := range before {
		if !chainsEqual(before[i], after[i]) {
			t.Fatalf("chain %d: %+v, then %+v", i, before[i], after[i])
		}
	}
	if _, err := f.s.Exchange(g, v); err != nil {
		t.Fatalf("a pending grant did not survive: %v", err)
	}
	tok2, err := f.s.Refresh(tok.Refresh)
	wantCode(t, err, "")
	f.restart()
	if _, err := f.s.Authenticate(tok2.Access); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Authenticate(tok.Access)
	wantCode(t, err, loginwire.CodeInvalid)
	_, err = f.s.Authenticate(revokedTok.Access)
	wantCode(t, err, loginwire.CodeInvalid)
}

func chainsEqual(a, b Chain) bool {
	return a.ID == b.ID && a.Identity == b.Identity && a.Created.Equal(b.Created) && a.Refreshed.Equal(b.Refreshed) &&
		a.AccessExpires.Equal(b.AccessExpires) && a.RefreshExpires.Equal(b.RefreshExpires) &&
		a.Revoked.Equal(b.Revoked) && a.RevokedWhy == b.RevokedWhy
}
