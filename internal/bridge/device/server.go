package device

import (
	"crypto/tls"
	"fmt"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Listen settings, from [devices] in config.toml.
type ListenConfig struct {
	// Addr is host:port. Loopback by default; empty turns the device API off.
	Addr string
	// TLS is "auto" (plain HTTP on loopback, TLS beyond it), "on" (TLS on
	// loopback too) or "off" (refused beyond loopback).
	TLS string
	// CertFile and KeyFile are the user's own certificate; without them a
	// self-signed one is made in the state folder at first start.
	CertFile, KeyFile string
	// PublicURL is the https:// origin phones open ([devices] public_url,
	// checked by config.ParsePublicURL); "" when unset. Pairing links and
	// pushes use it, and its host is on the Site's list.
	PublicURL string
	// ProxyHeaders is the kind of forwarded header a reverse proxy on
	// this machine sets ("", ProxyXForwarded, ProxyForwarded).
	ProxyHeaders string
}

// DefaultAddr is where the device API listens unless configured.
const DefaultAddr = "127.0.0.1:8780"

// Listener is the device API's socket and what a pairing shows of it.
type Listener struct {
	net.Listener
	URL         string // base URL for devices
	Fingerprint string // of the TLS certificate; empty for plain HTTP
	// Public is the origin phones open (ListenConfig.PublicURL), "" when
	// unset: then URL is the only address, which may be this machine's
	// alone.
	Public string
	// Site is the listener's allow-list of host names and origins: what
	// the device API serves, and what it takes writes from.
	Site *policy.Site
}

// Listen opens the device API's socket. Beyond loopback it is TLS only:
// plain HTTP there is refused with the setting to change.
func Listen(c ListenConfig, stateDir string) (*Listener, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("the device listen address %q is not host:port; set listen in [devices] of config.toml, for example %q", c.Addr, DefaultAddr)
	}
	loopback := policy.IsLoopback(host)
	useTLS := c.CertFile != "" || !loopback
	switch c.TLS {
	case "", "auto":
	case "on":
		useTLS = true
	case "off":
		if !loopback {
			return nil, fmt.Errorf("plain HTTP is refused on %s, which is reachable beyond this machine; remove tls = \"off\" from [devices] in config.toml (a self-signed certificate is made), or give tls_cert and tls_key", c.Addr)
		}
		useTLS = false
	default:
		return nil, fmt.Errorf("tls = %q in [devices] of config.toml is not known; use \"auto\", \"on\" or \"off\"", c.TLS)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, fmt.Errorf("give both tls_cert and tls_key in [devices] of config.toml, or neither")
	}
	var public *url.URL
	if c.PublicURL != "" {
		if public, err = url.Parse(c.PublicURL); err != nil || public.Scheme != "https" || public.Hostname() == "" {
			return nil, fmt.Errorf("public_url %q in [devices] of config.toml is not an https:// origin; see collie.toml(5)", c.PublicURL)
		}
	}
	if c.ProxyHeaders != "" && (!loopback || public == nil) {
		return nil, fmt.Errorf("proxy_headers in [devices] of config.toml needs a loopback listen address and public_url; see collie.toml(5)")
	}
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen for devices on %s: %w; choose another address with listen in [devices] of config.toml", c.Addr, err)
	}
	// The port the kernel gave, when the configuration said 0.
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	out := &Listener{Listener: l, URL: "http://" + net.JoinHostPort(policy.DisplayHost(host), port), Site: policy.NewSite("http", host, port)}
	// site finishes a listener's allow-list: public_url's host, and the
	// proxy's headers when trusted.
	site := func(s *policy.Site) *policy.Site {
		if public != nil {
			s.Allow("https", public.Hostname(), public.Port())
			out.Public = strings.TrimSuffix(public.String(), "/")
		}
		s.TrustProxy(c.ProxyHeaders)
		return s
	}
	if !useTLS {
		out.Site = site(out.Site)
		return out, nil
	}
	var cert tls.Certificate
	if c.CertFile != "" {
		cert, err = userCert(c.CertFile, c.KeyFile)
	} else {
		name, _ := os.Hostname()
		names := []string{host, name, "localhost", "127.0.0.1"}
		if public != nil {
			names = append(names, public.Hostname())
		}
		cert, err = SelfSigned(filepath.Join(stateDir, "tls"), names, time.Now())
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	out.Listener = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	out.URL = "https://" + net.JoinHostPort(policy.DisplayHost(host), port)
	out.Site = site(policy.NewSite("https", host, port))
	out.Fingerprint = Fingerprint(cert)
	return out, nil
}

func parseIP(s string) net.IP { return net.ParseIP(s) }
