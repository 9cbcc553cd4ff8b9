package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// DefaultTimeout bounds one request over HTTPS: connect, TLS, headers and
// the whole body, so a slow or endless body cannot hold the bridge (K2).
const DefaultTimeout = 10 * time.Second

// HTTPSOptions configure a token-transport client.
type HTTPSOptions struct {
	// CAFile is a PEM file of roots to trust beside the system's, for an
	// agent whose certificate a private CA signed. There is no option to
	// skip certificate checks.
	CAFile string
	// Timeout overrides DefaultTimeout.
	Timeout time.Duration
}

// NewHTTPS returns a client for the agent at baseURL (checked by
// sources.CheckURL), sending token as a bearer token with every request.
func NewHTTPS(baseURL, token string, o HTTPSOptions) (Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read the CA file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the CA file %s holds no PEM certificate; give the CA's certificate in PEM form", o.CAFile)
		}
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	tr := &http.Transport{
		Proxy:                  nil, // the token goes to the agent and nowhere else
		DialContext:            (&net.Dialer{Timeout: o.Timeout}).DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    o.Timeout,
		ResponseHeaderTimeout:  o.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    1,
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &reader{
		base:  strings.TrimSuffix(baseURL, "/"),
		token: token,
		hc: &http.Client{
			Transport: tr,
			Timeout:   o.Timeout,
			// Never follow a redirect: the token must not reach another host (K2).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}
