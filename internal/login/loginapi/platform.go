package loginapi

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// The platform's proof of who calls the agent-login action (R1, R5). The
// platform (its raft daemon) calls the action with an assertion in
// AssertionHeader: a compact JWS signed with Ed25519 by the platform's
// key, whose public half the user gives the bridge ([agents]
// platform_key_file). Its header is exactly AssertionJOSE; its claims are
// closed:
//
//	iss             the platform server's id
//	sub             the agent's id
//	app             the installation id of the collie app on that server
//	aud             "collie" (loginwire.Service)
//	code_challenge  the S256 challenge the action's body carries
//	iat, exp        seconds since the epoch; at most MaxAssertionLife apart
//	jti             a unique id, 16 to 128 characters; never accepted twice
//
// Binding the challenge into the signed claims means an assertion seen in
// transit can mint a grant only for the challenge of the agent that asked,
// which is useless without that agent's verifier.
const (
	AssertionHeader  = "Raft-Agent-Assertion"
	AssertionJOSE    = `{"alg":"EdDSA","typ":"raft-agent-assertion+jwt"}`
	MaxAssertionLife = 120 * time.Second
	maxAssertion     = 8 << 10
	clockSkew        = 30 * time.Second
	maxSeen          = 10000
)

// Claims are an assertion's claims.
type Claims struct {
	Iss           string `json:"iss"`
	Sub           string `json:"sub"`
	App           string `json:"app"`
	Aud           string `json:"aud"`
	CodeChallenge string `json:"code_challenge"`
	Iat           int64  `json:"iat"`
	Exp           int64  `json:"exp"`
	Jti           string `json:"jti"`
}

// Platform checks the platform's assertions with its public key.
type Platform struct {
	key ed25519.PublicKey
	now func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // jti -> when it may be forgotten
}

// NewPlatform checks assertions with key; now is the clock (nil:
// time.Now).
func NewPlatform(key ed25519.PublicKey, now func() time.Time) *Platform {
	if now == nil {
		now = time.Now
	}
	return &Platform{key: key, now: now, seen: map[string]time.Time{}}
}

// Verify checks an assertion and returns its claims: the signature, the
// header, every claim's form, the audience, the times (30 s of clock skew
// allowed) and that its jti was never accepted before. The error never
// carries the assertion.
func (p *Platform) Verify(assertion string) (Claims, error) {
	if len(assertion) > maxAssertion {
		return Claims{}, errors.New("the platform's assertion is longer than 8 KiB")
	}
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return Claims{}, errors.New("the platform's assertion is not a compact JWS (three parts)")
	}
	dec := base64.RawURLEncoding.Strict()
	head, err1 := dec.DecodeString(parts[0])
	body, err2 := dec.DecodeString(parts[1])
	sig, err3 := dec.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return Claims{}, errors.New("the platform's assertion is not unpadded base64url")
	}
	if !bytes.Equal(head, []byte(AssertionJOSE)) {
		return Claims{}, errors.New("the platform's assertion header is not " + AssertionJOSE)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(p.key, []byte(parts[0]+"."+parts[1]), sig) {
		return Claims{}, errors.New("the platform's assertion is not signed by the platform's key in [agents] platform_key_file")
	}
	var c Claims
	if err := jsonstrict.Unmarshal(body, &c); err != nil {
		return Claims{}, fmt.Errorf("the platform's assertion claims: %w", err)
	}
	if err := c.check(p.now()); err != nil {
		return Claims{}, err
	}
	return c, p.remember(c)
}

func (c Claims) check(now time.Time) error {
	for _, f := range []struct{ name, v string }{{"iss", c.Iss}, {"sub", c.Sub}, {"app", c.App}} {
		if !loginwire.ValidID(f.v) {
			return fmt.Errorf("the platform's assertion claim %s is not an id (1 to 128 of A-Z, a-z, 0-9, '.', '_', '-')", f.name)
		}
	}
	switch {
	case c.Aud != loginwire.Service:
		return fmt.Errorf("the platform's assertion is for %q, not %q", c.Aud, loginwire.Service)
	case !loginwire.ValidChallenge(c.CodeChallenge):
		return errors.New("the platform's assertion carries no S256 code_challenge")
	case len(c.Jti) < 16 || len(c.Jti) > 128:
		return errors.New("the platform's assertion jti is not 16 to 128 characters")
	case c.Exp <= c.Iat || time.Duration(c.Exp-c.Iat)*time.Second > MaxAssertionLife:
		return fmt.Errorf("the platform's assertion lives longer than %s, or not at all", MaxAssertionLife)
	case time.Unix(c.Iat, 0).After(now.Add(clockSkew)):
		return errors.New("the platform's assertion was issued in the future; check the clocks")
	case !time.Unix(c.Exp, 0).After(now.Add(-clockSkew)):
		return errors.New("the platform's assertion expired")
	}
	return nil
}

// remember refuses a jti seen before, and keeps it until its assertion
// can no longer be accepted.
func (p *Platform) remember(c Claims) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if _, dup := p.seen[c.Jti]; dup {
		return errors.New("the platform's assertion was used before (its jti is not new)")
	}
	if len(p.seen) >= maxSeen {
		var first time.Time // when the next one may be forgotten
		for j, until := range p.seen {
			if now.After(until) {
				delete(p.seen, j)
			} else if first.IsZero() || until.Before(first) {
				first = until
			}
		}
		if len(p.seen) >= maxSeen {
			wait := max(time.Second, first.Sub(now).Round(time.Second)+time.Second)
			return fmt.Errorf("the bridge holds %d platform assertions that have not expired, as many as it keeps; the oldest expires in %s: try again then", maxSeen, wait)
		}
	}
	p.seen[c.Jti] = time.Unix(c.Exp, 0).Add(clockSkew)
	return nil
}
