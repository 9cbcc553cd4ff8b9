package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/view"
)

// phoneDocs is where the set-ups for a phone are written down.
const phoneDocs = "docs/phone.md, collie.toml(5)"

// checkPublicURL checks [devices] public_url, the address phones open:
// whether it is set and, while the daemon runs, whether the bridge
// answers its /healthz through it (from this machine: the proxy or
// tailscale serve in front, its certificate, the Host check).
func checkPublicURL(ctx context.Context, e *Env) []Row {
	cfg, path, skipped := loadConfig(e)
	if skipped != nil {
		return skipped
	}
	d := cfg.Devices
	addr, on := d.DeviceListen()
	if !on {
		return []Row{ok("the device API is off, so phones have no address")}
	}
	setIt := "set public_url in [devices] of " + path + " to the https:// address your phone opens (" + phoneDocs + ")"
	o, set, _ := d.Public() // Load checked it
	if !set {
		// Not a fault: the bridge works on this machine without it. The
		// row says what a phone needs.
		host, _, _ := net.SplitHostPort(addr)
		if isLoopback(host) {
			return []Row{ok("not set: the pairing link is %s, which only this machine can open; to pair a phone, %s", addr, setIt)}
		}
		return []Row{ok("not set: phones get the listener's own address (%s), under a self-signed certificate unless tls_cert is set, where a phone's browser warns and cannot install the app or show notifications; %s", addr, setIt)}
	}
	if o.Loopback() {
		return []Row{warn(setIt, "%s is a loopback address: only this machine can open it", o)}
	}
	if e.Daemon == nil {
		return []Row{notRunning(e)}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	if _, err := e.Daemon.Agents(cctx); errors.Is(err, control.ErrNotRunning) {
		return []Row{notRunning(e)}
	} else if err != nil {
		return []Row{skip("see the daemon row", "the daemon does not answer")}
	}
	if e.Fetch == nil {
		return []Row{ok("set to %s", o)}
	}
	url := o.String() + "/healthz"
	status, body, err := e.Fetch(cctx, url)
	if err != nil {
		return []Row{fetchFailed(o.String(), o.Host, addr, err)}
	}
	switch {
	case status == http.StatusMisdirectedRequest:
		return []Row{fail("restart the daemon so it reads config.toml again: systemctl --user restart collie",
			"the bridge answered %s, but refused its host name: the daemon runs with another public_url than %s has", url, path)}
	case status != http.StatusOK || string(body) != view.HealthzBody:
		return []Row{fail("point the proxy (or tailscale serve) at the bridge's listen address "+addr+" ("+phoneDocs+")",
			"%s answered %d, and not as Collie's bridge does: something else serves that address", url, status)}
	}
	if host, _, _ := net.SplitHostPort(addr); isLoopback(host) && d.ProxyHeaders == config.ProxyNone {
		// A proxy in front, whose headers the bridge does not read.
		return []Row{warn(`set proxy_headers = "x-forwarded" in [devices] of `+path+` (or "forwarded" for a proxy that sends RFC 7239's header), then: systemctl --user restart collie`,
			"%s: the bridge answers there through a proxy, but does not read the proxy's forwarded headers: it cannot tell that phones came over https (their cookie is not marked Secure) nor tell one phone's address from another's (one rate limit for all)", o)}
	}
	return []Row{ok("%s: the bridge answers there (checked from this machine)", o)}
}

// fetchFailed says why the bridge could not be reached at its public URL.
func fetchFailed(origin, host, addr string, err error) Row {
	var unknown x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var dnsErr *net.DNSError
	var recHdr tls.RecordHeaderError
	switch {
	case errors.As(err, &unknown):
		return untrusted(origin, unknown, err)
	case errors.As(err, &hostErr):
		return fail("get a certificate for "+host+" ("+phoneDocs+")", "the certificate at %s is not for %s: %v", origin, host, hostErr)
	case errors.As(err, &invalid):
		return fail("renew the certificate ("+phoneDocs+")", "the certificate at %s is not valid: %v", origin, invalid)
	case errors.As(err, &recHdr) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fail("public_url is https://: put a TLS proxy in front of "+addr+", or set tls_cert and tls_key ("+phoneDocs+")",
			"%s does not speak TLS", origin)
	case errors.As(err, &dnsErr):
		return fail("check the name, or make it resolve: tailscale up for a tailnet name; for a LAN name such as collie.home.arpa, an entry on your router's or LAN's DNS server (the phone needs it too), or a line in /etc/hosts for this machine ("+phoneDocs+")",
			"this machine cannot resolve %s (%v)", host, dnsErr)
	}
	return fail("start the reverse proxy (or tailscale serve) in front of "+addr+" ("+phoneDocs+")",
		"nothing answers at %s: %v", origin, err)
}

// caddyLocal starts the names of Caddy's own authority, the one `tls
// internal` makes: its root is "Caddy Local Authority - 2026 ECC Root",
// its intermediate "Caddy Local Authority - ECC Intermediate".
const caddyLocal = "Caddy Local Authority"

// caddyRoot is where Debian's caddy service keeps that authority's root;
// a Caddy run by a user keeps it in ~/.local/share/caddy instead.
const caddyRoot = "/var/lib/caddy/.local/share/caddy/pki/authorities/local/root.crt"

// bridgeSelfSigned is the name in the certificate the bridge makes for
// itself when tls_cert is not set (device.ServerCert).
const bridgeSelfSigned = "collie bridge"

// untrusted says why this machine does not trust the certificate at
// origin, and what to do, by who issued it: Caddy's own authority (tls
// internal, the recipe of docs/phone.md: trust its root here and on the
// phone), the bridge's self-signed certificate (tls_cert is not set), or
// anyone else.
func untrusted(origin string, unknown x509.UnknownAuthorityError, err error) Row {
	// The chain the server sent, leaf first, and the certificate the
	// verifier stopped at.
	var certs []*x509.Certificate
	var verr *tls.CertificateVerificationError
	if errors.As(err, &verr) {
		certs = append(certs, verr.UnverifiedCertificates...)
	}
	if unknown.Cert != nil {
		certs = append(certs, unknown.Cert)
	}
	issuer := "an unknown issuer"
	if len(certs) > 0 && certs[0].Issuer.CommonName != "" {
		issuer = fmt.Sprintf("%q", certs[0].Issuer.CommonName)
	}
	for _, c := range certs {
		if strings.HasPrefix(c.Issuer.CommonName, caddyLocal) || strings.HasPrefix(c.Subject.CommonName, caddyLocal) {
			return fail("trust Caddy's root on this machine: sudo caddy trust (it fetches the root from Caddy's admin API), or copy Caddy's root.crt ("+caddyRoot+
				" for Debian's caddy service, ~/.local/share/caddy/pki/authorities/local/root.crt for a Caddy you run yourself) to /usr/local/share/ca-certificates/caddy-local.crt and run sudo update-ca-certificates; "+
				"then install the same root.crt on the phone ("+phoneDocs+")",
				"the certificate at %s is from Caddy's own authority (tls internal, %q), whose root this machine does not trust yet; a phone will not trust it either until that root is installed there", origin, c.Issuer.CommonName)
		}
		if c.Subject.CommonName == bridgeSelfSigned && c.Issuer.CommonName == bridgeSelfSigned {
			return fail("set tls_cert and tls_key in [devices] to a certificate for that name from an authority the phone trusts, or put Caddy or tailscale serve in front of the bridge ("+phoneDocs+")",
				"the certificate at %s is the bridge's own self-signed one (tls_cert is not set), which no phone trusts: its browser warns, and cannot install the app or show notifications", origin)
		}
	}
	return fail("use a certificate from an authority phones already trust (tailscale serve's, or Let's Encrypt's, which Caddy gets by itself for a public DNS name), "+
		"or install your own authority's root on this machine (copy it to /usr/local/share/ca-certificates/ as a .crt file and run sudo update-ca-certificates) and on the phone ("+phoneDocs+")",
		"the certificate at %s is signed by %s, an authority this machine does not trust, so a phone will not trust it either", origin, issuer)
}

// fetchHealthz is Env.Fetch on a real machine: one GET with the system's
// certificate authorities, no proxy, no redirect, a small cap on the body.
var fetchHealthz = newFetch(nil, "")

// newFetch makes a Fetch: roots nil means the system's; dialTo, when set,
// is where every connection goes (tests).
func newFetch(roots *x509.CertPool, dialTo string) func(ctx context.Context, url string) (int, []byte, error) {
	return func(ctx context.Context, url string) (int, []byte, error) {
		tr := &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots}}
		if dialTo != "" {
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, dialTo)
			}
		}
		c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer tr.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, unwrapURL(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return resp.StatusCode, body, err
	}
}

// unwrapURL drops the "Get \"url\":" that net/http puts before an error.
func unwrapURL(err error) error {
	var u *neturl.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}
