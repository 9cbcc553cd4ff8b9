package upstream

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
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
	// Shared, when set, is shared with the other clients made with it:
	// the roots built from CAFile, and turns to connect (see Shared).
	// Without it the client builds its own roots and connects at will.
	Shared *Shared
	// Timeout overrides DefaultTimeout.
	Timeout time.Duration
}

// NewHTTPS returns a client for the agent at baseURL (checked by
// sources.CheckURL), sending token as a bearer token with every request.
func NewHTTPS(baseURL, token string, o HTTPSOptions) (Waiter, error) {
	roots, err := o.Shared.pool(o.CAFile)
	if err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Hostname() == "" {
		return nil, fmt.Errorf("the agent's address %q is not an https:// URL", baseURL)
	}
	tr := &httpsTransport{
		scheme:  u.Scheme,
		host:    hostPort(u),
		netDial: (&net.Dialer{Timeout: o.Timeout}).DialContext,
		config: &tls.Config{
			RootCAs:    roots,
			ServerName: u.Hostname(),
			MinVersion: tls.VersionTLS12,
			NextProtos: []string{"http/1.1"},
			// A connection made anew (beside a held read, or after the
			// agent closed one) resumes the session: no full handshake.
			ClientSessionCache: tls.NewLRUClientSessionCache(4),
		},
		timeout: o.Timeout,
		shared:  o.Shared,
		pool:    newPool(),
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

// httpsTransport keeps a connection to one agent over TLS, as the socket
// transport keeps one to a socket (connPool): HTTP/1.1, one connection
// held while the agent holds a waiting read, with no goroutine or buffer
// of its own. It goes to the agent's host and nowhere else: no proxy, and
// the certificate must be the host's. Over http:// (an agent on this
// machine, which sources.CheckURL allows only on loopback) there is no TLS.
type httpsTransport struct {
	scheme  string // https, or http
	host    string // host:port
	netDial func(ctx context.Context, network, addr string) (net.Conn, error)
	config  *tls.Config
	timeout time.Duration // connect and handshake
	shared  *Shared       // turns to connect; nil: at will
	pool    *connPool
}

// RoundTrip sends req, which must be for the agent's host, over the kept
// connection or a new one.
func (t *httpsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != t.scheme || hostPort(req.URL) != t.host {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("a request for %s://%s on the connection to %s", req.URL.Scheme, req.URL.Host, t.host)
	}
	return t.pool.send(req, t.dial)
}

// hostPort is u's host and port, the scheme's port when u names none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), map[string]string{"https": "443", "http": "80"}[u.Scheme])
}

// dial connects to the agent and completes the TLS handshake, checking its
// certificate (unless over http://), within the transport's timeout, once
// its turn comes (Shared).
func (t *httpsTransport) dial(ctx context.Context) (net.Conn, error) {
	done, err := t.shared.handshake(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	raw, err := t.netDial(ctx, "tcp", t.host)
	if err != nil || t.scheme == "http" {
		return raw, err
	}
	c := tls.Client(raw, t.config)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}

// CloseIdleConnections closes the connection no request is using.
func (t *httpsTransport) CloseIdleConnections() { t.pool.closeIdle() }
