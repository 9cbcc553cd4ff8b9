package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// publicURLMax bounds public_url: an origin, not a document's address.
const publicURLMax = 512

// PublicOrigin is [devices] public_url, checked: the https:// origin a
// phone opens. Host is lower-case without a final dot; Port is "" for the
// default (443).
type PublicOrigin struct {
	Host, Port string
}

// String is the origin as a browser writes it: https://host[:port].
func (o PublicOrigin) String() string {
	h := o.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	if o.Port == "" {
		return "https://" + h
	}
	return "https://" + h + ":" + o.Port
}

// Loopback reports whether only this machine can open the origin.
func (o PublicOrigin) Loopback() bool {
	if o.Host == "localhost" || strings.HasSuffix(o.Host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(o.Host)
	return err == nil && ip.IsLoopback()
}

// ParsePublicURL checks a public_url: https, a host, an optional port,
// and nothing else (no user name or password, no path but "/", no query
// or fragment). The error is a sentence that says what to write instead.
func ParsePublicURL(s string) (PublicOrigin, error) {
	const example = `for example public_url = "https://collie.example.ts.net"`
	bad := func(why string) (PublicOrigin, error) {
		return PublicOrigin{}, fmt.Errorf("[devices] public_url %q %s; give the https:// address phones open, with no path, %s", clip(s), why, example)
	}
	if len(s) > publicURLMax {
		return bad(fmt.Sprintf("is over %d bytes", publicURLMax))
	}
	if strings.TrimSpace(s) != s || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r > 0x7e }) {
		return bad("has spaces, control or non-ASCII characters (write an international name in its xn-- form)")
	}
	if strings.ContainsAny(s, "%\\") {
		return bad("has % or \\ in it")
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("is not a URL")
	}
	switch {
	case u.Scheme != "https":
		return bad("is not https:// (a phone's browser installs the app and shows notifications only over https)")
	case u.Opaque != "" || u.Host == "":
		return bad("has no host")
	case u.User != nil:
		return bad("has a user name or password")
	case u.Path != "" && u.Path != "/", u.RawPath != "":
		return bad("has a path (the web app is served at the origin's root)")
	case u.RawQuery != "" || u.ForceQuery:
		return bad("has a query")
	case u.Fragment != "" || strings.Contains(s, "#"):
		return bad("has a fragment")
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return bad("has an empty port")
	}
	if port != "" {
		n, err := parsePort(port)
		if err != nil {
			return bad("has a port that is not 1 to 65535")
		}
		if n == 443 {
			port = ""
		}
	}
	if strings.HasPrefix(u.Host, "[") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad("has a bracketed host that is not an IPv6 address")
		}
		host = ip.String()
	} else if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.String()
	} else if !validName(host) {
		return bad("has a host that is not a DNS name (letters, digits, - and . only)")
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return PublicOrigin{Host: host, Port: port}, nil
}

// validName: labels of letters, digits and -, 1 to 63 bytes, not
// starting or ending with -; at most 253 bytes; a final dot allowed.
func validName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	// All digits and dots is an IPv4 address netip refused (01.2.3.4).
	return strings.Trim(h, "0123456789.") != ""
}

func parsePort(p string) (int, error) {
	if p == "" || len(p) > 5 || strings.Trim(p, "0123456789") != "" || p[0] == '0' {
		return 0, fmt.Errorf("bad port")
	}
	n := 0
	for _, c := range []byte(p) {
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("bad port")
	}
	return n, nil
}

// clip keeps an error short when the value is long.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// Proxy header kinds for [devices] proxy_headers.
const (
	ProxyNone       = ""
	ProxyXForwarded = "x-forwarded"
	ProxyForwarded  = "forwarded"
)

// Public returns public_url checked, and false when it is not set.
func (d Devices) Public() (PublicOrigin, bool, error) {
	if d.PublicURL == "" {
		return PublicOrigin{}, false, nil
	}
	o, err := ParsePublicURL(d.PublicURL)
	return o, err == nil, err
}

// check validates [devices] beyond its types: the daemon, collie pair
// and collie doctor refuse the same file for the same reason.
func (d Devices) check() error {
	if _, _, err := d.Public(); err != nil {
		return err
	}
	switch d.ProxyHeaders {
	case ProxyNone, ProxyXForwarded, ProxyForwarded:
	default:
		return fmt.Errorf(`[devices] proxy_headers = %q is not known; use "x-forwarded" (Caddy, nginx, tailscale serve) or "forwarded" (RFC 7239), the headers your reverse proxy sets, or remove it`, clip(d.ProxyHeaders))
	}
	if d.ProxyHeaders != ProxyNone {
		if addr, on := d.DeviceListen(); on {
			if host, _, err := net.SplitHostPort(addr); err == nil && !loopbackHost(host) {
				return fmt.Errorf("[devices] proxy_headers is set, but listen = %q is reachable beyond this machine; a reverse proxy's headers are trusted only on a loopback listener: set listen = \"127.0.0.1:8780\" and put the proxy in front of it", addr)
			}
		}
		if d.PublicURL == "" {
			return fmt.Errorf("[devices] proxy_headers is set without public_url; set public_url to the https:// address the proxy serves")
		}
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}
