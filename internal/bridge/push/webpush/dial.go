package webpush

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
)

// A push service is on the public internet: the browser chose it (Google's,
// Mozilla's, Apple's, Microsoft's). The endpoint, though, comes from a
// device, so the bridge's own client connects only to public addresses,
// checked on the address it really dials (after DNS, so a name that
// resolves to this machine or its network is refused too): a subscription
// cannot make the bridge send requests into the user's network.

// errNotPublic is why a connection to a push service was refused.
var errNotPublic = errors.New("the push service's address is not a public internet address, so the bridge does not connect to it")

// publicClient is the provider's client when none is given: no proxy (the
// connection goes where the endpoint says, to a public address, and
// nowhere else), each push bounded by push.AttemptTimeout: a push service
// that holds its answer longer is tried again later (the dispatcher's
// backoff), while the pushes to other devices go on.
func publicClient() *http.Client {
	d := &net.Dialer{Timeout: push.AttemptTimeout, Control: publicOnly}
	return &http.Client{
		Timeout: push.AttemptTimeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           d.DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   push.AttemptTimeout,
			ResponseHeaderTimeout: push.AttemptTimeout,
			MaxIdleConns:          8,
			IdleConnTimeout:       90 * time.Second,
		},
	}
}

// publicOnly is a net.Dialer's Control: it refuses a connection to an
// address that is not public.
func publicOnly(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w (%v)", errNotPublic, err)
	}
	if !isPublic(ap.Addr()) {
		return fmt.Errorf("%w (%s)", errNotPublic, ap.Addr())
	}
	return nil
}

// special are ranges that are not on the public internet beyond what
// netip's predicates name: shared address space (carrier-grade NAT and
// Tailscale), benchmarking, documentation, "this network", reserved, and
// IPv6 documentation and discard.
var special = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4", "2001:db8::/32", "100::/64", "64:ff9b:1::/48"} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

func isPublic(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() {
		return false
	}
	for _, p := range special {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
