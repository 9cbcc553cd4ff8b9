package webpush

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// Limits of a subscription, checked before anything is stored or sent.
const (
	// MaxEndpoint is the longest endpoint taken. The push services of the
	// browsers in use give 100 to 500 bytes.
	MaxEndpoint = 1024
	// MaxSubscriptionJSON is the longest subscription body decoded.
	MaxSubscriptionJSON = 2048
	p256dhSize          = 65 // an uncompressed P-256 point (RFC 8291 §3.1)
	authSize            = 16 // the auth secret (RFC 8291 §3.2)
)

// Subscription is a browser's push subscription as PushSubscription.toJSON
// gives it (W3C Push API): where to send (the endpoint, an https URL of
// the browser's push service) and the keys to encrypt for. The endpoint
// and keys are secrets of the device: whoever holds them can push to it.
type Subscription struct {
	Endpoint string `json:"endpoint"`
	// ExpirationTime is what the browser said; the bridge keeps it only
	// to give it back. Browsers send null.
	ExpirationTime *int64 `json:"expirationTime"`
	Keys           Keys64 `json:"keys"`
}

// Keys64 are a subscription's keys, base64url without padding.
type Keys64 struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// ErrSubscription is wrapped by every error of DecodeSubscription and
// Subscription.Validate.
var ErrSubscription = errors.New("not a valid push subscription")

// DecodeSubscription reads the JSON a page posts (PushSubscription.toJSON)
// with the strict decoder (one value, exact member names, nothing unknown)
// and validates it. Errors are sentences in printable ASCII that never
// quote the endpoint or keys.
func DecodeSubscription(data []byte) (Subscription, error) {
	if len(data) > MaxSubscriptionJSON {
		return Subscription{}, fmt.Errorf("%w: it is more than %d bytes", ErrSubscription, MaxSubscriptionJSON)
	}
	var s Subscription
	if err := jsonstrict.Unmarshal(data, &s); err != nil {
		return Subscription{}, fmt.Errorf("%w: %v", ErrSubscription, err)
	}
	if err := s.Validate(); err != nil {
		return Subscription{}, err
	}
	return s, nil
}

// Validate checks a subscription strictly: the endpoint is an https URL of
// at most MaxEndpoint printable ASCII bytes with a host name or address,
// an optional port, a path, no user name or password and no fragment; the
// keys are a P-256 point on the curve and a 16-byte secret, in base64url.
func (s Subscription) Validate() error {
	if err := validEndpoint(s.Endpoint); err != nil {
		return fmt.Errorf("%w: its endpoint %v", ErrSubscription, err)
	}
	if _, err := s.publicKey(); err != nil {
		return fmt.Errorf("%w: its p256dh key %v", ErrSubscription, err)
	}
	if _, err := s.auth(); err != nil {
		return fmt.Errorf("%w: its auth secret %v", ErrSubscription, err)
	}
	if s.ExpirationTime != nil && *s.ExpirationTime < 0 {
		return fmt.Errorf("%w: its expirationTime is negative", ErrSubscription)
	}
	return nil
}

func validEndpoint(e string) error {
	switch {
	case e == "":
		return errors.New("is empty")
	case len(e) > MaxEndpoint:
		return fmt.Errorf("is more than %d bytes", MaxEndpoint)
	case !strings.HasPrefix(e, "https://"):
		return errors.New("is not an https:// address")
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; c <= ' ' || c >= 0x7f || c == '\\' || c == '#' {
			return errors.New("holds a space, a control character, a backslash, a # or a character that is not ASCII")
		}
	}
	u, err := url.Parse(e)
	if err != nil {
		return errors.New("is not a URL")
	}
	if u.User != nil || strings.Contains(u.Host, "@") {
		return errors.New("holds a user name or password")
	}
	if u.Path == "" || u.Path[0] != '/' {
		return errors.New("has no path")
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") || (port != "" && !validPort(port)) {
		return errors.New("has a port that is not 1 to 65535")
	}
	if !validHost(host) {
		return errors.New("has no valid host name")
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '0' && p[0] != '+'
}

// validHost takes an IP address (no IPv6 zone) or a DNS name of letters,
// digits and hyphens, each label 1 to 63 bytes, at most 253 in all.
func validHost(h string) bool {
	if strings.Contains(h, "%") {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func (s Subscription) publicKey() ([]byte, error) {
	b, err := decode64(s.Keys.P256dh, p256dhSize)
	if err != nil {
		return nil, err
	}
	if _, err := ecdhPublic(b); err != nil {
		return nil, errors.New("is not a point on P-256")
	}
	return b, nil
}

func (s Subscription) auth() ([]byte, error) { return decode64(s.Keys.Auth, authSize) }

// decode64 decodes base64url without padding, strictly (no stray bits),
// into exactly n bytes.
func decode64(v string, n int) ([]byte, error) {
	if len(v) != base64.RawURLEncoding.EncodedLen(n) {
		return nil, fmt.Errorf("is not %d bytes in base64url without padding", n)
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("is not %d bytes in base64url without padding", n)
	}
	return b, nil
}

// Origin is the push service's origin, the audience of the VAPID token
// (RFC 8292 §2), and its host for log lines: the endpoint's path is a
// capability and is never logged.
func (s Subscription) Origin() string {
	u, err := url.Parse(s.Endpoint)
	if err != nil {
		return ""
	}
	// The ASCII serialisation of an origin (RFC 6454 §6.2): host in
	// lower case, the default port left out.
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && p != "443" {
		host += ":" + p
	}
	return "https://" + host
}
