package device

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// WriteHeader must be on every write. A browser cannot add it to a
// cross-site request without a CORS preflight, which this server never
// grants, so a page on another site cannot make a device's browser write
// (D6). Clients outside a browser simply send it.
const WriteHeader = "Collie-Write"

// CookieName carries the credential for the web app. It is HttpOnly and
// SameSite=Strict, so other sites' pages never send it.
const CookieName = "collie_device"

type ctxKey struct{}

// deviceOf returns the device a request was authenticated as.
func deviceOf(ctx context.Context) Device {
	d, _ := ctx.Value(ctxKey{}).(Device)
	return d
}

// credential reads the device credential from the Authorization header or
// the web app's cookie.
func credential(r *http.Request) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return tok
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

// sameOrigin reports whether a browser's Origin header, when there is one,
// names this server: a request another site's page made is refused.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin" || r.Header.Get("Sec-Fetch-Site") == "none"
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && u.Host == r.Host
}

// limiter is a token bucket per device: a flood of writes from one device
// is refused rather than passed on to the agents.
type limiter struct {
	rate  float64 // tokens a second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate, burst float64, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: burst, now: now, buckets: map[string]*bucket{}}
}

func (l *limiter) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
