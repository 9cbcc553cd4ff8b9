package upstream

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
)

// Shared is what the HTTPS clients of one bridge share, so that a
// thousand agents cost the bridge what they must and no more:
//
//   - the certificate roots they trust, built once for each CA file's
//     contents (a pool of the system's roots and a CA's costs tens of KiB,
//     which a thousand agents behind one CA need once, not a thousand
//     times);
//   - turns to connect: at most MaxHandshakes TLS handshakes at once, so
//     that a bridge starting with a thousand agents, or a collie durable
//     list reading them all, neither holds a thousand handshakes' memory
//     at once nor opens a thousand connections to one host together.
//
// The zero value is ready to use.
type Shared struct {
	mu    sync.Mutex
	pools map[[sha256.Size]byte]*x509.CertPool
	slots chan struct{} // one per handshake under way; made on first use
	limit int           // the slots; 0 is MaxHandshakes
}

// MaxHandshakes is how many TLS handshakes the clients of one Shared make
// at once. The others wait their turn, within their request's time.
const MaxHandshakes = 64

// maxPools bounds the pools Shared keeps: past it (CA files that keep
// changing), it starts again empty.
const maxPools = 64

// handshake waits for a turn to connect, and returns what ends it; ctx
// ends the wait. A nil Shared gives a turn at once.
func (s *Shared) handshake(ctx context.Context) (func(), error) {
	if s == nil {
		return func() {}, nil
	}
	s.mu.Lock()
	if s.slots == nil {
		n := s.limit
		if n == 0 {
			n = MaxHandshakes
		}
		s.slots = make(chan struct{}, n)
	}
	slots := s.slots
	s.mu.Unlock()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// pool returns the roots to trust for caFile: nil for the system's own
// (no copy made), else the system's and the file's certificates.
func (s *Shared) pool(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the CA file: %w", err)
	}
	sum := sha256.Sum256(pem)
	if s != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if p := s.pools[sum]; p != nil {
			return p, nil
		}
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate; give the CA's certificate in PEM form", caFile)
	}
	if s != nil {
		if s.pools == nil || len(s.pools) >= maxPools {
			s.pools = map[[sha256.Size]byte]*x509.CertPool{}
		}
		s.pools[sum] = roots
	}
	return roots, nil
}
