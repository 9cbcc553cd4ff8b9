package loginapi

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// testPlatform is the platform's side of the assertion, for the tests.
type testPlatform struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
	n    int
}

func newTestPlatform(t testing.TB) *testPlatform {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &testPlatform{pub: pub, priv: priv}
}

// claims are good claims at now for challenge, with a fresh jti.
func (p *testPlatform) claims(now time.Time, challenge string) map[string]any {
	p.n++
	return map[string]any{"iss": "srv-1", "sub": "agent-7", "app": "app-1", "aud": "collie", "code_challenge": challenge,
		"iat": now.Unix(), "exp": now.Unix() + 60, "jti": "jti-0123456789-" + strings.Repeat("x", p.n)}
}

// sign makes an assertion of claims with header (AssertionJOSE when "").
func (p *testPlatform) sign(header string, claims any) string {
	if header == "" {
		header = AssertionJOSE
	}
	body, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString(body)
	return in + "." + enc.EncodeToString(ed25519.Sign(p.priv, []byte(in)))
}

// TestAssertion_R5: the platform's proof is checked whole: signature by
// the configured key, the exact header, closed claims of the right form,
// audience, times within 120 s and 30 s of skew, and a jti used once.
func TestAssertion_R5(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	p := newTestPlatform(t)
	other := newTestPlatform(t)
	ch := loginwire.Challenge(strings.Repeat("v", 43))
	with := func(k string, v any) map[string]any {
		c := p.claims(now, ch)
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name, assertion, want string
	}{
		{"good", p.sign("", p.claims(now, ch)), ""},
		{"another key", other.sign("", p.claims(now, ch)), "not signed by the platform's key"},
		{"alg none", p.sign(`{"alg":"none","typ":"raft-agent-assertion+jwt"}`, p.claims(now, ch)), "header is not"},
		{"plain jwt typ", p.sign(`{"alg":"EdDSA","typ":"JWT"}`, p.claims(now, ch)), "header is not"},
		{"two parts", "a.b", "not a compact JWS"},
		{"padded", p.sign("", p.claims(now, ch)) + "=", "not unpadded base64url"},
		{"empty", "", "not a compact JWS"},
		{"too long", strings.Repeat("a", 9000), "longer than 8 KiB"},
		{"unknown claim", p.sign("", with("scope", "all")), "scope"},
		{"no sub", p.sign("", with("sub", nil)), "claim sub is not an id"},
		{"bad sub", p.sign("", with("sub", "../x")), "claim sub is not an id"},
		{"long sub", p.sign("", with("sub", strings.Repeat("a", 129))), "claim sub is not an id"},
		{"bad iss", p.sign("", with("iss", ".x")), "claim iss is not an id"},
		{"bad app", p.sign("", with("app", "")), "claim app is not an id"},
		{"other audience", p.sign("", with("aud", "hands")), `for "hands"`},
		{"bad challenge", p.sign("", with("code_challenge", "abc")), "no S256 code_challenge"},
		{"short jti", p.sign("", with("jti", "short")), "jti is not 16 to 128"},
		{"lives too long", p.sign("", with("exp", now.Unix()+121)), "lives longer than"},
		{"exp before iat", p.sign("", with("exp", now.Unix()-1)), "lives longer than"},
		{"issued in the future", p.sign("", with("iat", now.Unix()+31)), "issued in the future"},
		{"expired", p.sign("", func() map[string]any {
			c := p.claims(now, ch)
			c["iat"], c["exp"] = now.Unix()-100, now.Unix()-31
			return c
		}()), "expired"},
		{"within skew", p.sign("", func() map[string]any {
			c := p.claims(now, ch)
			c["iat"], c["exp"] = now.Unix()-100, now.Unix()-29
			return c
		}()), ""},
	}
	v := NewPlatform(p.pub, func() time.Time { return now })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.assertion)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want == "" && (c.Sub != "agent-7" || c.Iss != "srv-1" || c.App != "app-1" || c.CodeChallenge != ch):
				t.Fatalf("claims = %+v", c)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), tt.assertion[min(len(tt.assertion), 20):]) && len(tt.assertion) > 40:
				t.Fatalf("R6: the error carries the assertion: %v", err)
			}
		})
	}
	// Replay: the same assertion twice.
	a := p.sign("", p.claims(now, ch))
	if _, err := v.Verify(a); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(a); err == nil || !strings.Contains(err.Error(), "used before") {
		t.Fatalf("a replayed assertion: %v", err)
	}
}

// FuzzVerify: no assertion makes Verify panic, and whatever it accepts
// has claims of the required form.
func FuzzVerify(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	// A fixed key, so that the signed seeds in testdata verify.
	priv := ed25519.NewKeyFromSeed([]byte("collie-fuzz-platform-key-seed-32"))
	p := &testPlatform{pub: priv.Public().(ed25519.PublicKey), priv: priv}
	f.Add(p.sign("", p.claims(now, loginwire.Challenge(strings.Repeat("v", 43)))))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		v := NewPlatform(p.pub, func() time.Time { return now })
		c, err := v.Verify(s)
		if err == nil && (c.Aud != loginwire.Service || !loginwire.ValidID(c.Sub) || !loginwire.ValidChallenge(c.CodeChallenge)) {
			t.Fatalf("accepted claims %+v", c)
		}
	})
}
