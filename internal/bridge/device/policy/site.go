package policy

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Site is the device API's own address: the host names and ports a
// browser may use to reach it (the Host header) and the origins of its own
// page (the Origin header). A request for any other host is refused before
// any route, reads and the web app included, so a page on another name
// that resolves to this machine (DNS rebinding) gets nothing; and a write
// whose Origin is not on the list is refused as cross-site. Origin is
// compared with this list, never with the request's own Host, which the
// page chooses.
//
// The list, by listen address ([devices] listen in config.toml):
//
//   - one IP address: that address and port; on loopback also
//     localhost, 127.0.0.1 and ::1 with the same port;
//   - a host name: that name and port, and localhost, 127.0.0.1 and ::1
//     when it is localhost;
//   - every address (0.0.0.0, ::, or no host): the machine's host name,
//     which the pairing link shows, localhost, 127.0.0.1 and ::1, and an
//     IP literal equal to the address the connection came in on (this
//     machine's own address on that interface, whatever DHCP gave it). A
//     page can only have an IP literal as its origin when the browser did
//     connect to that IP, so IP literals cannot be rebound.
//
// The port must match; a Host without a port means the scheme's default
// (80, 443). Names are compared without case and without a final dot. The
// address phones open ([devices] public_url: a reverse proxy's, tailscale
// serve's, or this listener's own under the user's certificate) is one
// more entry: Allow. Behind a reverse proxy on this machine, TrustProxy
// makes the host the browser used part of the check too.
type Site struct {
	scheme  string // the listener's: "http" or "https"
	port    string // the listener's
	anyAddr bool   // listening on every address: the local-address rule applies
	proxy   string // the forwarded headers trusted from a loopback peer: "", ProxyXForwarded or ProxyForwarded
	entries []siteEntry
}

type siteEntry struct{ scheme, host, port string }

// NewSite returns the allow-list of a listener: scheme "http" or "https",
// the host as configured (empty, 0.0.0.0 or :: for every address) and the
// port it listens on.
func NewSite(scheme, listenHost, port string) *Site {
	s := &Site{scheme: scheme, port: port}
	h := normHost(listenHost)
	switch {
	case h == "" || h == "0.0.0.0" || h == "::":
		s.anyAddr = true
		if name := normHost(DisplayHost(listenHost)); name != "" && name != h {
			s.Allow(scheme, name, port)
		}
		s.allowLoopback()
	default:
		s.Allow(scheme, h, port)
		if IsLoopback(h) {
			s.allowLoopback()
		}
	}
	return s
}

func (s *Site) allowLoopback() {
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		s.Allow(s.scheme, h, s.port)
	}
}

// Allow adds an address a browser may use: a public URL's scheme, host
// and port (empty for the scheme's default).
func (s *Site) Allow(scheme, host, port string) {
	if port == "" {
		port = defaultPort(scheme)
	}
	e := siteEntry{scheme, normHost(host), port}
	for _, have := range s.entries {
		if have == e {
			return
		}
	}
	s.entries = append(s.entries, e)
}

// Hosts lists the allowed host:port pairs, for messages and tests.
func (s *Site) Hosts() []string {
	out := make([]string, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, net.JoinHostPort(e.host, e.port))
	}
	return out
}

// HostOK reports whether the request's Host is one of this site's and,
// when a trusted proxy forwarded it (TrustProxy), so is the host the
// browser asked the proxy for: both, so that a page on this machine
// cannot pass off a rebound name by adding a header.
func (s *Site) HostOK(r *http.Request) bool {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !s.hostMatch(r, scheme, "", r.Host) {
		return false
	}
	v, ok := viaOf(r)
	if !ok || v.host == "" {
		return true
	}
	return s.hostMatch(r, "", v.scheme, v.host)
}

// hostMatch checks one host:port. connScheme is the connection's, for
// the local-address rule; when want is set the entry's scheme must be it.
func (s *Site) hostMatch(r *http.Request, connScheme, want, hostport string) bool {
	host, port, ok := splitHost(hostport)
	if !ok {
		return false
	}
	for _, e := range s.entries {
		if want != "" && e.scheme != want {
			continue
		}
		p := port
		if p == "" {
			p = defaultPort(e.scheme)
		}
		if e.host == host && e.port == p {
			return true
		}
	}
	if connScheme == "" {
		return false
	}
	if port == "" {
		port = defaultPort(connScheme)
	}
	return s.localIP(r, connScheme, host, port)
}

// OriginOK reports whether a request comes from this site's own page:
// its Origin, when the browser sends one, is on the list; without Origin,
// Sec-Fetch-Site (when sent) says same-origin or a user's own navigation.
// A client outside a browser sends neither.
//
// It is not http.CrossOriginProtection, which compares Origin with the
// request's own Host (the page's to choose) whatever the scheme, believes
// Sec-Fetch-Site over an Origin of another site, and passes every read:
// TestSite_StricterThanCrossOriginProtection_D6 shows each.
func (s *Site) OriginOK(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		switch r.Header.Get("Sec-Fetch-Site") {
		case "", "same-origin", "none":
			return true
		}
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false // "null", opaque or malformed origins included
	}
	host, port, ok := splitHost(u.Host)
	if !ok {
		return false
	}
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	for _, e := range s.entries {
		if e.scheme == u.Scheme && e.host == host && e.port == port {
			return true
		}
	}
	return s.localIP(r, u.Scheme, host, port)
}

// localIP is the rule for a listener on every address: an IP literal is
// this site when it is the address the connection came in on.
func (s *Site) localIP(r *http.Request, scheme, host, port string) bool {
	if !s.anyAddr || scheme != s.scheme || port != s.port {
		return false
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	local, err := netip.ParseAddrPort(la.String())
	return err == nil && local.Addr().Unmap() == ip.Unmap()
}

// splitHost splits a Host header or an origin's host into a normalised
// host and its port ("" when it has none).
func splitHost(hostport string) (host, port string, ok bool) {
	if hostport == "" || strings.ContainsAny(hostport, " %/\\@") {
		return "", "", false
	}
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		if p == "" || strings.TrimLeft(p, "0123456789") != "" {
			return "", "", false
		}
		host, port = h, p
	} else if strings.HasPrefix(hostport, "[") || strings.Count(hostport, ":") > 0 {
		// "[::1]" without a port, or a bare IPv6 address
		host = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
		if _, err := netip.ParseAddr(host); err != nil {
			return "", "", false
		}
	}
	host = normHost(host)
	return host, port, host != ""
}

// normHost lower-cases a name and drops a final dot; an IP address is
// written in its canonical form.
func normHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")), ".")
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return ""
		}
		return ip.Unmap().String()
	}
	return h
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}
