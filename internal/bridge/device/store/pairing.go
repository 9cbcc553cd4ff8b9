package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// PairingTTL is how long a pairing secret can be redeemed.
const PairingTTL = 10 * time.Minute

// Pairing is one single-use offer to pair a device.
type Pairing struct {
	Secret  string    // goes to the device in the URL's fragment, never to a server log
	Code    string    // short verification code both sides show
	Expires time.Time //
}

// Errors of Redeem. The device API tells a device them in its own words
// (apierr's PairingUnknown and PairingExpired).
var (
	ErrPairingUnknown = errors.New("the pairing secret is not valid: it was used already, or never made")
	ErrPairingExpired = errors.New("the pairing secret has expired")
)

// Pairings holds the secrets `collie pair` made, in memory only: a restart
// of the daemon forgets them, which is the safe way to fail.
type Pairings struct {
	now func() time.Time

	mu      sync.Mutex
	pending map[string]time.Time // secret hash → expiry
}

// NewPairings returns an empty set of pairing offers.
func NewPairings(now func() time.Time) *Pairings {
	if now == nil {
		now = time.Now
	}
	return &Pairings{now: now, pending: map[string]time.Time{}}
}

// New makes a pairing secret valid for PairingTTL.
func (p *Pairings) New() (Pairing, error) {
	secret, err := random(32)
	if err != nil {
		return Pairing{}, err
	}
	exp := p.now().Add(PairingTTL)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prune()
	p.pending[hashCred(secret)] = exp
	return Pairing{Secret: secret, Code: VerificationCode(secret), Expires: exp}, nil
}

// Redeem uses up secret. It succeeds once, within PairingTTL.
func (p *Pairings) Redeem(secret string) error {
	h := hashCred(secret)
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, ok := p.pending[h]
	if !ok {
		return ErrPairingUnknown
	}
	delete(p.pending, h) // single use, even when expired
	if p.now().After(exp) {
		return ErrPairingExpired
	}
	return nil
}

func (p *Pairings) prune() {
	now := p.now()
	for h, exp := range p.pending {
		if now.After(exp) {
			delete(p.pending, h)
		}
	}
}

// VerificationCode derives the short code shown by `collie pair` and by the
// device from the secret, so a user can see both ends hold the same one:
// six digits of SHA-256 over "collie-pair:" and the secret.
func VerificationCode(secret string) string {
	sum := sha256.Sum256([]byte("collie-pair:" + secret))
	n := binary.BigEndian.Uint32(sum[:4]) % 1000000
	return fmt.Sprintf("%03d %03d", n/1000, n%1000)
}
