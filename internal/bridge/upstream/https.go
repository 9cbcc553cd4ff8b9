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
// A waiting read gets its wait on top.
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
func NewHTTPS(baseURL, token string, o HTTPSOptions) (Waiter, error) {
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
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    2, // a waiting read and a write may be under way at once
		IdleConnTimeout:        90 * time.Second,
		ForceAttemptHTTP2:      true,
	}
	return &reader{
		base:    strings.TrimSuffix(baseURL, "/"),
		token:   token,
		timeout: o.Timeout, // the whole request, beyond any wait
		whole:   true,
		hc: &http.Client{
			Transport: tr,
			// Never follow a redirect: the token must not reach another host (K2).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}
