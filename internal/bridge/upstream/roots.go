package upstream

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
)

// Roots builds the certificate roots HTTPS clients trust, once for each CA
// file's contents: a pool of the system's roots and a CA's costs tens of
// KiB, which a thousand agents behind one CA need once, not a thousand
// times. The zero value is ready to use.
type Roots struct {
	mu    sync.Mutex
	pools map[[sha256.Size]byte]*x509.CertPool
}

// maxPools bounds the pools Roots keeps: past it (CA files that keep
// changing), it starts again empty.
const maxPools = 64

// pool returns the roots to trust for caFile: nil for the system's own
// (no copy made), else the system's and the file's certificates.
func (r *Roots) pool(caFile string) (*x509.CertPool, error) {
	if caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the CA file: %w", err)
	}
	sum := sha256.Sum256(pem)
	if r != nil {
		r.mu.Lock()
		defer r.mu.Unlock()
		if p := r.pools[sum]; p != nil {
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
	if r != nil {
		if r.pools == nil || len(r.pools) >= maxPools {
			r.pools = map[[sha256.Size]byte]*x509.CertPool{}
		}
		r.pools[sum] = roots
	}
	return roots, nil
}
