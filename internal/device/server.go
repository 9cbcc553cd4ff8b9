package device

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
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
}

// DefaultAddr is where the device API listens unless configured.
const DefaultAddr = "127.0.0.1:8780"

// Listener is the device API's socket and what a pairing shows of it.
type Listener struct {
	net.Listener
	URL         string // base URL for devices
	Fingerprint string // of the TLS certificate; empty for plain HTTP
	// Site is the listener's allow-list of host names and origins: what
	// the device API serves, and what it takes writes from.
	Site *Site
}

// Listen opens the device API's socket. Beyond loopback it is TLS only:
// plain HTTP there is refused with the setting to change.
func Listen(c ListenConfig, stateDir string) (*Listener, error) {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return nil, fmt.Errorf("the device listen address %q is not host:port; set listen in [devices] of config.toml, for example %q", c.Addr, DefaultAddr)
	}
	loopback := isLoopback(host)
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
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen for devices on %s: %w; choose another address with listen in [devices] of config.toml", c.Addr, err)
	}
	// The port the kernel gave, when the configuration said 0.
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	out := &Listener{Listener: l, URL: "http://" + net.JoinHostPort(displayHost(host), port), Site: NewSite("http", host, port)}
	if !useTLS {
		return out, nil
	}
	var cert tls.Certificate
	if c.CertFile != "" {
		cert, err = userCert(c.CertFile, c.KeyFile)
	} else {
		name, _ := os.Hostname()
		cert, err = SelfSigned(filepath.Join(stateDir, "tls"), []string{host, name, "localhost", "127.0.0.1"}, time.Now())
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	out.Listener = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	out.URL = "https://" + net.JoinHostPort(displayHost(host), port)
	out.Site = NewSite("https", host, port)
	out.Fingerprint = Fingerprint(cert)
	return out, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// displayHost is the name a device should use: the machine's name when
// the bridge listens on every address.
func displayHost(host string) string {
	if host == "" || host == "0.0.0.0" || host == "::" {
		if name, err := os.Hostname(); err == nil {
			return name
		}
	}
	return host
}

func parseIP(s string) net.IP { return net.ParseIP(s) }
