// Package pushtest is a push service for tests (RFC 8030): an HTTPS server
// on loopback that takes pushes only for the subscriptions it made, checks
// each push's VAPID token (RFC 8292: ES256 signature with the key in k,
// aud the service's origin, exp at most 24 hours away, sub a contact URI)
// and decrypts its payload with the subscription's private key and auth
// secret (RFC 8291, aes128gcm of RFC 8188). It is written apart from
// internal/bridge/push/webpush, with HMAC by hand where that package uses
// crypto/hkdf, so that each checks the other.
package pushtest

import (
	"cmp"
	"context"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// MaxBody is the largest push body the service takes (RFC 8291 §4).
const MaxBody = 4096

// Service is the push service.
type Service struct {
	srv    *httptest.Server
	now    func() time.Time
	closed chan struct{} // closed as the test ends: a held answer ends

	mu      sync.Mutex
	subs    map[string]*Sub // by endpoint path
	pushes  []Push
	changed chan struct{} // closed at each push received, then made anew
}

// Sub is a subscription the service made, as a browser holds it: the
// endpoint and public keys it gives the page, and the private key and
// auth secret it decrypts with.
type Sub struct {
	Endpoint string
	P256dh   string // base64url, uncompressed P-256 point
	Auth     string // base64url, 16 bytes
	AppKey   string // the applicationServerKey it was made with; "" none

	priv    *ecdh.PrivateKey
	auth    []byte
	status  int     // what pushes to it get; 0: 201 Created
	replies []Reply // what the next pushes get, before status
	hang    bool    // pushes to it get no answer
}

// Reply is what the service answers one push with, after checking it.
type Reply struct {
	Status     int    // 0: 201 Created
	RetryAfter string // the Retry-After header, as sent; "" none
}

// JSON is the subscription as PushSubscription.toJSON gives it to a page.
func (s *Sub) JSON() []byte {
	b, _ := json.Marshal(map[string]any{
		"endpoint": s.Endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": s.P256dh, "auth": s.Auth},
	})
	return b
}

// Push is one push the service received.
type Push struct {
	At       time.Time // when it arrived, on the machine's clock
	Endpoint string
	Status   int    // what the service answered
	Problem  string // why it refused the push; "" when it was taken apart whole
	Claims   Claims // the VAPID token's claims, once verified
	Key      string // the k parameter: the VAPID public key
	TTL      string
	Urgency  string
	Payload  []byte // decrypted
}

// Claims are a VAPID token's claims (RFC 8292 §2).
type Claims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// New starts the service; it stops when the test ends. now is the
// service's clock for the token's exp (nil: time.Now).
func New(t testing.TB, now func() time.Time) *Service {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	s := &Service{now: now, subs: map[string]*Sub{}, closed: make(chan struct{}), changed: make(chan struct{})}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	t.Cleanup(func() { close(s.closed) }) // first: Close waits for the held answers
	return s
}

// Client trusts the service's certificate.
func (s *Service) Client() *http.Client { return s.srv.Client() }

// Origin is the service's origin, the audience its tokens must name.
func (s *Service) Origin() string { return s.srv.URL }

// Subscribe makes a subscription bound to appKey (the VAPID public key,
// base64url; "" binds none), as pushManager.subscribe does.
func (s *Service) Subscribe(t testing.TB, appKey string) *Sub {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	id := make([]byte, 18)
	rand.Read(id)
	path := "/push/" + base64.RawURLEncoding.EncodeToString(id)
	sub := &Sub{Endpoint: s.srv.URL + path, AppKey: appKey, priv: priv, auth: auth,
		P256dh: b64(priv.PublicKey().Bytes()), Auth: b64(auth)}
	s.mu.Lock()
	s.subs[path] = sub
	s.mu.Unlock()
	return sub
}

// Answer makes the service answer pushes to sub with status after checking
// them (404 or 410: gone; 429, 5xx: try later).
func (s *Service) Answer(sub *Sub, status int) {
	s.mu.Lock()
	sub.status = status
	s.mu.Unlock()
}

// Replies makes the service answer the next pushes to sub with rs, one
// each, in order; then as Answer said (201 Created by default).
func (s *Service) Replies(sub *Sub, rs ...Reply) {
	s.mu.Lock()
	sub.replies = append(sub.replies, rs...)
	s.mu.Unlock()
}

// Hang makes the service never answer pushes to sub: it reads each one
// and holds the request open until the client gives up or the test ends,
// as a push service that has stopped answering does. A push it holds is
// in Pushes, with Status 0.
func (s *Service) Hang(sub *Sub) {
	s.mu.Lock()
	sub.hang = true
	s.mu.Unlock()
}

// Taken returns, for each endpoint, how many pushes the service took
// (answered 2xx): what reached the device.
func (s *Service) Taken() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, p := range s.pushes {
		if p.Status >= 200 && p.Status < 300 {
			out[p.Endpoint]++
		}
	}
	return out
}

// Await returns when cond holds of the pushes received so far (checked
// now and at each push received), or with ctx's error when ctx ends
// first.
func (s *Service) Await(ctx context.Context, cond func([]Push) bool) error {
	for {
		s.mu.Lock()
		ok, changed := cond(s.pushes), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Pushes returns the pushes received so far.
func (s *Service) Pushes() []Push {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Push(nil), s.pushes...)
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	sub := s.subs[r.URL.Path]
	s.mu.Unlock()
	p := Push{At: time.Now(), Endpoint: s.srv.URL + r.URL.Path, TTL: r.Header.Get("TTL"), Urgency: r.Header.Get("Urgency")}
	p.Status, p.Problem = s.check(r, sub, &p)
	retryAfter := ""
	s.mu.Lock()
	hang := p.Problem == "" && sub.hang
	switch {
	case hang:
		p.Status = 0
	case p.Problem == "" && len(sub.replies) > 0:
		rp := sub.replies[0]
		sub.replies = sub.replies[1:]
		p.Status, retryAfter = cmp.Or(rp.Status, http.StatusCreated), rp.RetryAfter
	case p.Problem == "" && sub.status != 0:
		p.Status = sub.status
		if p.Status == http.StatusTooManyRequests {
			retryAfter = "30"
		}
	}
	s.pushes = append(s.pushes, p)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if hang {
		select {
		case <-r.Context().Done():
		case <-s.closed:
		}
		panic(http.ErrAbortHandler) // no answer at all, not a late one
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(p.Status)
}

// check takes a push apart as a push service and a browser would; it
// returns the status to answer and, for a refusal, why.
func (s *Service) check(r *http.Request, sub *Sub, p *Push) (int, string) {
	switch {
	case r.Method != http.MethodPost:
		return http.StatusMethodNotAllowed, "method " + r.Method
	case sub == nil:
		return http.StatusNotFound, "no such subscription"
	case p.TTL == "" || !digits(p.TTL):
		return http.StatusBadRequest, "no TTL header of digits (RFC 8030 §5.2)"
	case p.Urgency != "" && !oneOf(p.Urgency, "very-low", "low", "normal", "high"):
		return http.StatusBadRequest, "Urgency " + p.Urgency
	case r.Header.Get("Content-Encoding") != "aes128gcm":
		return http.StatusUnsupportedMediaType, "Content-Encoding is not aes128gcm"
	}
	claims, key, err := s.verifyVAPID(r.Header.Get("Authorization"))
	if err != nil {
		return http.StatusUnauthorized, "VAPID: " + err.Error()
	}
	p.Claims, p.Key = claims, key
	if sub.AppKey != "" && key != sub.AppKey {
		return http.StatusForbidden, "VAPID key is not the one the subscription was made with (RFC 8292 §4.2)"
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return http.StatusBadRequest, "body: " + err.Error()
	}
	if len(body) > MaxBody {
		return http.StatusRequestEntityTooLarge, "body over 4096 bytes"
	}
	plain, err := decrypt(body, sub.priv, sub.auth)
	if err != nil {
		return http.StatusBadRequest, "decrypt: " + err.Error()
	}
	p.Payload = plain
	return http.StatusCreated, ""
}

// verifyVAPID checks an Authorization header "vapid t=<JWT>, k=<key>".
func (s *Service) verifyVAPID(h string) (Claims, string, error) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return Claims{}, "", fmt.Errorf("scheme is not vapid: %q", h)
	}
	params := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || params[k] != "" {
			return Claims{}, "", fmt.Errorf("bad parameter %q", part)
		}
		params[k] = v
	}
	token, key := params["t"], params["k"]
	if token == "" || key == "" || len(params) != 2 {
		return Claims{}, "", fmt.Errorf("want parameters t and k, got %d", len(params))
	}
	keyBytes, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return Claims{}, "", fmt.Errorf("k is not base64url: %v", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), keyBytes)
	if err != nil {
		return Claims{}, "", fmt.Errorf("k is not a P-256 point: %v", err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return Claims{}, "", fmt.Errorf("the token has %d parts, not 3", len(parts))
	}
	var hdr struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	if err := unb64JSON(parts[0], &hdr); err != nil || hdr.Alg != "ES256" || (hdr.Typ != "" && hdr.Typ != "JWT") {
		return Claims{}, "", fmt.Errorf("header %+v (%v) is not ES256", hdr, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return Claims{}, "", fmt.Errorf("the signature is not 64 bytes of base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return Claims{}, "", fmt.Errorf("the signature does not verify with k")
	}
	var c Claims
	if err := unb64JSON(parts[1], &c); err != nil {
		return Claims{}, "", fmt.Errorf("claims: %v", err)
	}
	now := s.now().Unix()
	switch {
	case c.Aud != s.srv.URL:
		return c, "", fmt.Errorf("aud %q is not the service's origin %q", c.Aud, s.srv.URL)
	case c.Exp <= now:
		return c, "", fmt.Errorf("exp %d has passed (now %d)", c.Exp, now)
	case c.Exp > now+24*3600:
		return c, "", fmt.Errorf("exp %d is more than 24 hours away (now %d)", c.Exp, now)
	case !strings.HasPrefix(c.Sub, "mailto:") && !strings.HasPrefix(c.Sub, "https://"):
		return c, "", fmt.Errorf("sub %q is not a mailto: or https: URI", c.Sub)
	}
	return c, key, nil
}

func unb64JSON(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func digits(s string) bool {
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}

func oneOf(s string, list ...string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}
