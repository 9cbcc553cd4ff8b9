package loginservice

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// TestExchange_R5: a login mints prefixed tokens for the grant's stored
// identity, with the contract's lifetimes, and the file keeps digests only.
func TestExchange_R5(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	if !strings.HasPrefix(g, "collie_g_") || len(g) != len("collie_g_")+43 {
		t.Fatalf("grant shape: %d bytes", len(g))
	}
	f.clock.Add(10 * time.Second)
	tok, err := f.s.Exchange(g, v)
	wantCode(t, err, "")
	now := epoch.Add(10 * time.Second)
	if !strings.HasPrefix(tok.Access, "collie_a_") || !strings.HasPrefix(tok.Refresh, "collie_r_") ||
		len(tok.Access) != 9+43 || len(tok.Refresh) != 9+43 {
		t.Fatal("token shapes are wrong")
	}
	if !tok.AccessExpires.Equal(now.Add(15*time.Minute)) || !tok.RefreshExpires.Equal(now.Add(30*24*time.Hour)) {
		t.Fatalf("expiries %v %v", tok.AccessExpires, tok.RefreshExpires)
	}
	sess, err := f.s.Authenticate(tok.Access)
	wantCode(t, err, "")
	if sess.Identity != alice || len(sess.Chain) != 12 || !isHex(sess.Chain, 12) {
		t.Fatalf("session %+v", sess)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{g, v, tok.Access, tok.Refresh, g[9:], tok.Access[9:], tok.Refresh[9:]} {
		if strings.Contains(string(data), secret) {
			t.Fatal("the store file holds a credential")
		}
	}
	for _, d := range []string{digestOf(g), digestOf(tok.Access), digestOf(tok.Refresh)} {
		if !strings.Contains(string(data), d) {
			t.Fatal("the store file lacks a digest it should keep")
		}
	}
	if fi, _ := os.Stat(f.path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if s := tok.String() + tok.GoString(); strings.Contains(s, tok.Access) || strings.Contains(s, tok.Refresh) {
		t.Fatal("Tokens.String shows a token")
	}
}

// TestGrantExpiry_R5_R13: a grant is exchangeable at 299 s and expired at
// 300 s, to the second.
func TestGrantExpiry_R5_R13(t *testing.T) {
	for _, c := range []struct {
		after time.Duration
		code  string
	}{
		{0, ""},
		{299 * time.Second, ""},
		{300*time.Second - time.Nanosecond, ""},
		{300 * time.Second, loginwire.CodeExpired},
		{301 * time.Second, loginwire.CodeExpired},
	} {
		t.Run(c.after.String(), func(t *testing.T) {
			f := newFixture(t)
			g, v := f.grant(alice)
			f.clock.Add(c.after)
			_, err := f.s.Exchange(g, v)
			wantCode(t, err, c.code)
		})
	}
	f := newFixture(t)
	_, exp, err := f.s.Grant(alice, loginwire.Challenge(newVerifier()))
	if err != nil || !exp.Equal(epoch.Add(300*time.Second)) {
		t.Fatalf("expires %v, %v", exp, err)
	}
}

// TestGrantSingleUse_R5_R13: a grant is exchanged once; a replay says
// consumed until the grant's expiry, after which it is dropped at the next
// write and is unknown.
func TestGrantSingleUse_R5_R13(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	f.login(bob)
	if _, err := f.s.Exchange(g, v); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(299 * time.Second)
	_, err := f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeConsumed)
	f.restart()
	_, err = f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeConsumed)
	if len(f.s.List()) != 2 {
		t.Fatal("a replay made a chain")
	}
	f.clock.Add(time.Second)
	f.grant(bob) // a write: drops the expired grant
	if _, ok := f.s.st.grants[digestOf(g)]; ok {
		t.Fatal("a consumed grant was kept past its expiry")
	}
	_, err = f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeInvalid)
}

// TestGrantRefusals_R5_R13: unknown and malformed grants, malformed and
// wrong verifiers (which do not burn the grant until the fifth), and an
// intercepted grant without its verifier makes no session.
func TestGrantRefusals_R5_R13(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	other := newVerifier()
	for _, c := range []struct {
		name, grant, verifier, code string
	}{
		{"unknown grant", "collie_g_" + strings.Repeat("A", 43), v, loginwire.CodeInvalid},
		{"empty grant", "", v, loginwire.CodeInvalid},
		{"access token as grant", "collie_a_" + g[9:], v, loginwire.CodeInvalid},
		{"grant too long", g + "A", v, loginwire.CodeInvalid},
		{"short verifier", g, v[:42], loginwire.CodeInvalid},
		{"illegal verifier", g, v[:50] + "+", loginwire.CodeInvalid},
		{"empty verifier", g, "", loginwire.CodeInvalid},
		{"wrong verifier 1", g, other, loginwire.CodeGrantProofMismatch},
		{"wrong verifier 2", g, other, loginwire.CodeGrantProofMismatch},
		{"the challenge as verifier", g, loginwire.Challenge(v), loginwire.CodeGrantProofMismatch},
		{"wrong verifier 4", g, other, loginwire.CodeGrantProofMismatch},
		{"the right one still works after 4", g, v, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.s.Exchange(c.grant, c.verifier)
			wantCode(t, err, c.code)
		})
	}

	// Five wrong verifiers burn the grant, across a restart too.
	g, v = f.grant(alice)
	for i := range 5 {
		_, err := f.s.Exchange(g, other)
		wantCode(t, err, loginwire.CodeGrantProofMismatch)
		if i == 2 {
			f.restart()
		}
	}
	_, err := f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeConsumed)
	if n := len(f.s.List()); n != 1 {
		t.Fatalf("%d chains, want the one login", n)
	}
}

// TestGrantIssueRefusals_R5: Grant refuses a challenge that is not S256
// and an identity outside the rule.
func TestGrantIssueRefusals_R5(t *testing.T) {
	f := newFixture(t)
	good := loginwire.Challenge("x")
	for _, c := range []struct {
		name      string
		id        Identity
		challenge string
	}{
		{"plain challenge", alice, strings.Repeat("a", 42)},
		{"padded challenge", alice, good + "="},
		{"empty agent", Identity{Server: "s", App: "a"}, good},
		{"agent with slash", Identity{Agent: "a/b", Server: "s", App: "a"}, good},
		{"server starting with a dot", Identity{Agent: "a", Server: ".s", App: "a"}, good},
		{"app too long", Identity{Agent: "a", Server: "s", App: strings.Repeat("a", 129)}, good},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := f.s.Grant(c.id, c.challenge)
			wantCode(t, err, loginwire.CodeInvalid)
		})
	}
	if _, _, err := f.s.Grant(Identity{Agent: strings.Repeat("a", 128), Server: "S-1", App: "a.b_c"}, good); err != nil {
		t.Fatal(err)
	}
}

// TestGrantBindingMismatch_R5: a grant whose stored identity no longer
// passes validation is refused at exchange and mints nothing.
func TestGrantBindingMismatch_R5(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	f.s.st.grants[digestOf(g)].Identity.Server = "../other"
	_, err := f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeBindingMismatch)
	if len(f.s.List()) != 0 {
		t.Fatal("a chain was made")
	}
}

// TestExchangeWriteFailure_R5: when the store cannot be written the
// exchange is refused with temporarily_unavailable and undone: the grant
// is still usable.
func TestExchangeWriteFailure_R5(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	fail := true
	failingWrite(f.s, &fail)
	_, err := f.s.Exchange(g, v)
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	if len(f.s.List()) != 0 || !f.s.st.grants[digestOf(g)].Consumed.IsZero() {
		t.Fatal("a failed exchange changed the store in memory")
	}
	_, _, err = f.s.Grant(bob, loginwire.Challenge(v))
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	fail = false
	if _, err := f.s.Exchange(g, v); err != nil {
		t.Fatalf("the grant did not survive a failed write: %v", err)
	}
}

// TestPendingGrantLimit_R5: at most 1,000 grants wait; expired ones do not
// count, and consumed ones do not either.
func TestPendingGrantLimit_R5(t *testing.T) {
	f := newFixture(t)
	ch := loginwire.Challenge("x")
	for i := range maxPendingGrants - 1 {
		d := digestOf(string(rune(i)) + "pending")
		other := Identity{Agent: fmt.Sprintf("agent-%d", i/maxPendingPerAgent), Server: "srv.1", App: "inst_42"}
		f.s.st.grants[d] = &grantRec{Digest: d, Identity: other, Challenge: ch, Issued: epoch, Expires: epoch.Add(loginwire.GrantTTL)}
	}
	g, v := f.grant(alice) // the 1,000th
	_, _, err := f.s.Grant(alice, ch)
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	if _, err := f.s.Exchange(g, v); err != nil { // consumed: 999 wait
		t.Fatal(err)
	}
	f.grant(alice)
	_, _, err = f.s.Grant(alice, ch)
	wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
	f.clock.Add(loginwire.GrantTTL)
	f.grant(alice)
	if n := len(f.s.st.grants); n != 1 {
		t.Fatalf("%d grants kept after the others expired, want 1", n)
	}
}

// TestConcurrentExchange_R5_R13: twenty exchanges of one grant at once:
// exactly one wins, the rest are told it was consumed.
func TestConcurrentExchange_R5_R13(t *testing.T) {
	f := newFixture(t)
	g, v := f.grant(alice)
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() { _, errs[i] = f.s.Exchange(g, v) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		wantCode(t, err, loginwire.CodeConsumed)
	}
	if wins != 1 || len(f.s.List()) != 1 {
		t.Fatalf("%d wins, %d chains; want 1 and 1", wins, len(f.s.List()))
	}
}

// TestNoCredentialInLogsOrErrors_R6: nothing the store logs or refuses with
// carries a grant, verifier or token, across every path.
func TestNoCredentialInLogsOrErrors_R6(t *testing.T) {
	f := newFixture(t)
	var secrets, messages []string
	note := func(err error) {
		if err != nil {
			messages = append(messages, err.Error())
		}
	}
	g, v := f.grant(alice)
	secrets = append(secrets, g, v)
	_, err := f.s.Exchange(g, newVerifier())
	note(err)
	tok, err := f.s.Exchange(g, v)
	note(err)
	_, err = f.s.Exchange(g, v)
	note(err)
	secrets = append(secrets, tok.Access, tok.Refresh)
	tok2, err := f.s.Refresh(tok.Refresh)
	note(err)
	secrets = append(secrets, tok2.Access, tok2.Refresh)
	_, err = f.s.Authenticate(tok.Access)
	note(err)
	_, err = f.s.Refresh(tok.Refresh) // reuse
	note(err)
	_, err = f.s.RevokeAgent(tok2.Refresh) // pasted by mistake
	note(err)
	_, err = f.s.Revoke(tok2.Refresh, tok2.Access)
	note(err)
	fail := true
	failingWrite(f.s, &fail)
	v3 := newVerifier()
	fail = false
	g3, _, err := f.s.Grant(bob, loginwire.Challenge(v3))
	note(err)
	fail = true
	_, err = f.s.Exchange(g3, v3)
	note(err)
	secrets = append(secrets, g3, v3)
	all := strings.Join(messages, "\n") + f.logs.String()
	if len(messages) < 6 || f.logs.String() == "" {
		t.Fatalf("too little to check: %q", all)
	}
	for _, s := range secrets {
		if strings.Contains(all, s) || strings.Contains(all, s[9:]) {
			t.Fatalf("a credential is in a log line or an error:\n%s", all)
		}
	}
}

// TestOneAgentsGrantFloodLeavesRoom_R5: one agent's flood of agent-login
// actions (a thousand grants asked for within their lifetime) runs into
// its own limit of pending grants, and every other agent still logs in;
// once its grants expire, the flooding agent logs in again too.
func TestOneAgentsGrantFloodLeavesRoom_R5(t *testing.T) {
	f := newFixture(t)
	ch := loginwire.Challenge(strings.Repeat("v", 43))
	issued, refused := 0, 0
	for range maxPendingGrants {
		if _, _, err := f.s.Grant(alice, ch); err != nil {
			wantCode(t, err, loginwire.CodeTemporarilyUnavailable)
			refused++
			continue
		}
		issued++
	}
	if issued != maxPendingPerAgent || refused != maxPendingGrants-maxPendingPerAgent {
		t.Fatalf("one agent got %d grants (%d refused), want %d", issued, refused, maxPendingPerAgent)
	}
	if !strings.Contains(f.logs.String(), "this agent has too many logins waiting") {
		t.Fatalf("the refusal is not in the log:\n%s", f.logs)
	}
	// Another agent of the same server, and the same agent id on another
	// server, log in at once.
	for _, other := range []Identity{bob, {Agent: alice.Agent, Server: "srv.2", App: alice.App}} {
		g, v := f.grant(other)
		if _, err := f.s.Exchange(g, v); err != nil {
			t.Fatalf("%v: %v", other, err)
		}
	}
	f.clock.Add(loginwire.GrantTTL)
	g, v := f.grant(alice)
	if _, err := f.s.Exchange(g, v); err != nil {
		t.Fatal(err)
	}
}
