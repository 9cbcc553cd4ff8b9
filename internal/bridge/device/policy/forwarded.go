package policy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxy header kinds a Site may trust ([devices] proxy_headers).
const (
	ProxyXForwarded = "x-forwarded" // X-Forwarded-Proto, -Host, -For: Caddy, nginx, tailscale serve
	ProxyForwarded  = "forwarded"   // Forwarded (RFC 7239)
)

// via is what a trusted reverse proxy on this machine said about a
// request: the scheme and host the browser used and the browser's
// address. Fields it did not send are "".
type via struct {
	scheme, host string
	client       netip.Addr
}

type viaKey struct{}

// errForwarded is a forwarded header that does not parse: the proxy in
// front is set up wrong, and the request is refused rather than guessed.
var errForwarded = errors.New("the reverse proxy in front of the bridge sent a forwarded header that does not parse")

// TrustProxy makes the site read one kind of forwarded header
// (ProxyXForwarded or ProxyForwarded), and only on connections from this
// machine's loopback: the reverse proxy in front of a loopback listener.
// The other kind, and either kind from any other peer, is ignored, so a
// client cannot pass its own through a proxy that sets only the other.
func (s *Site) TrustProxy(kind string) { s.proxy = kind }

// Proxy is the kind of forwarded header the site trusts ("" for none).
func (s *Site) Proxy() string { return s.proxy }

// Front reads the forwarded headers of a request from a trusted proxy
// into its context, for HostOK, Source and Secure. A request that does
// not come through one is returned as it is.
func (s *Site) Front(r *http.Request) (*http.Request, error) {
	if s.proxy == "" || !loopbackPeer(r) {
		return r, nil
	}
	var v via
	var present bool
	var err error
	switch s.proxy {
	case ProxyXForwarded:
		v, present, err = xForwarded(r.Header)
	case ProxyForwarded:
		v, present, err = forwardedHeader(r.Header.Values("Forwarded"))
	}
	if err != nil {
		return nil, err
	}
	if !present {
		return r, nil
	}
	return r.WithContext(context.WithValue(r.Context(), viaKey{}, v)), nil
}

func viaOf(r *http.Request) (via, bool) {
	v, ok := r.Context().Value(viaKey{}).(via)
	return v, ok
}

// Secure reports whether the browser reached the bridge over https:
// this connection is TLS, or a trusted proxy said so.
func Secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	v, ok := viaOf(r)
	return ok && v.scheme == "https"
}

func loopbackPeer(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// last is the last of a header's comma-separated values over all its
// lines: the one the proxy nearest the bridge added.
func last(h http.Header, name string) (string, bool) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	l := vs[len(vs)-1]
	if i := strings.LastIndexByte(l, ','); i >= 0 {
		l = l[i+1:]
	}
	return strings.TrimSpace(l), true
}

// xForwarded reads X-Forwarded-Proto, -Host and -For.
func xForwarded(h http.Header) (via, bool, error) {
	var v via
	proto, hasProto := last(h, "X-Forwarded-Proto")
	host, hasHost := last(h, "X-Forwarded-Host")
	client, hasFor := last(h, "X-Forwarded-For")
	if !hasProto && !hasHost && !hasFor {
		return v, false, nil
	}
	var err error
	if hasProto {
		if v.scheme, err = forwardedScheme(proto); err != nil {
			return v, false, err
		}
	}
	if hasHost {
		if _, _, ok := splitHost(host); !ok {
			return v, false, errForwarded
		}
		v.host = host
	}
	if hasFor {
		if v.client, err = forwardedClient(client); err != nil {
			return v, false, err
		}
	}
	return v, true, nil
}

func forwardedScheme(s string) (string, error) {
	switch strings.ToLower(s) {
	case "https":
		return "https", nil
	case "http":
		return "http", nil
	}
	return "", errForwarded
}

// forwardedClient parses a client address: an IP, "[IPv6]", either with
// a port; RFC 7239's "unknown" and obfuscated names ("_x") are no address.
func forwardedClient(s string) (netip.Addr, error) {
	if s == "unknown" || strings.HasPrefix(s, "_") {
		return netip.Addr{}, nil
	}
	if ip, err := netip.ParseAddr(s); err == nil && ip.Zone() == "" {
		return ip.Unmap(), nil
	}
	if h, _, err := net.SplitHostPort(s); err == nil {
		if h == "unknown" || strings.HasPrefix(h, "_") {
			return netip.Addr{}, nil
		}
		if ip, err := netip.ParseAddr(h); err == nil && ip.Zone() == "" {
			return ip.Unmap(), nil
		}
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if ip, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && ip.Is6() && ip.Zone() == "" {
			return ip, nil
		}
	}
	return netip.Addr{}, errForwarded
}

// forwardedHeader reads the last element of Forwarded (RFC 7239):
// pairs of for, by, host and proto, each a token or a quoted string.
func forwardedHeader(lines []string) (via, bool, error) {
	var v via
	if len(lines) == 0 {
		return v, false, nil
	}
	elems := splitQuoted(strings.Join(lines, ","), ',')
	elem := strings.TrimSpace(elems[len(elems)-1])
	if elem == "" {
		return v, false, errForwarded
	}
	seen := map[string]bool{}
	for _, pair := range splitQuoted(elem, ';') {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		name = strings.ToLower(name)
		if !ok || name == "" || seen[name] {
			return v, false, errForwarded
		}
		seen[name] = true
		value, err := unquote(value)
		if err != nil {
			return v, false, err
		}
		switch name {
		case "proto":
			if v.scheme, err = forwardedScheme(value); err != nil {
				return v, false, err
			}
		case "host":
			if _, _, ok := splitHost(value); !ok {
				return v, false, errForwarded
			}
			v.host = value
		case "for":
			if v.client, err = forwardedClient(value); err != nil {
				return v, false, err
			}
		}
	}
	return v, true, nil
}

// splitQuoted splits s at sep outside quoted strings.
func splitQuoted(s string, sep byte) []string {
	var out []string
	quoted, esc, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case esc:
			esc = false
		case quoted && c == '\\':
			esc = true
		case c == '"':
			quoted = !quoted
		case !quoted && c == sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote turns a token or a quoted string into its value.
func unquote(s string) (string, error) {
	if s == "" {
		return "", errForwarded
	}
	if s[0] != '"' {
		if strings.ContainsAny(s, "\" \t\\") {
			return "", errForwarded
		}
		return s, nil
	}
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", errForwarded
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if c == '"' {
			return "", errForwarded
		}
		if c == '\\' {
			i++
			if i == len(s)-1 {
				return "", errForwarded
			}
			c = s[i]
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// ProxyHeaderNames names the headers TrustProxy reads, for messages.
func (s *Site) ProxyHeaderNames() string {
	if s.proxy == ProxyForwarded {
		return "Forwarded (RFC 7239)"
	}
	return "X-Forwarded-Proto, X-Forwarded-Host and X-Forwarded-For"
}
