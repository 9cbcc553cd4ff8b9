package policy

import (
	"net"
	"net/http"
	"net/netip"
	"os"
)

// Source is where a request came from, for the per-source limits: the
// client's IPv4 address, or its IPv6 /64 (one host can hold a whole
// /64). Behind a reverse proxy every request comes from the proxy, so all
// its clients share one source unless the site trusts the proxy's
// forwarded headers (Site.TrustProxy); on loopback, every local process
// shares one.
func Source(r *http.Request) string {
	if v, ok := viaOf(r); ok && v.client.IsValid() {
		return sourceIP(v.client)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "unknown"
	}
	return sourceIP(ip)
}

// sourceIP is an address as a source: an IPv6 address's /64.
func sourceIP(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// IsLoopback reports whether a listen host is this machine's loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// DisplayHost is the name a device should use: the machine's name when
// the bridge listens on every address.
func DisplayHost(host string) string {
	if host == "" || host == "0.0.0.0" || host == "::" {
		if name, err := os.Hostname(); err == nil {
			return name
		}
	}
	return host
}
