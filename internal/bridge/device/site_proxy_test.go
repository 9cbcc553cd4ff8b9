package device

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/view"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// TestBehindProxy_D6: through the API's own router, a proxy's malformed
// header is refused with what to fix; a pairing forwarded as https gets a
// Secure cookie; a read from another site's page is refused before any
// handler; /healthz answers at the listener's and public_url's host and
// nowhere else, and holds nothing.
func TestBehindProxy_D6(t *testing.T) {
	f := newFixture(t)
	f.api.site.Allow("https", "collie.example", "")
	f.api.site.TrustProxy(policy.ProxyXForwarded)
	get := func(path string, hdr map[string]string, host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	t.Run("malformed_forwarded_header", func(t *testing.T) {
		resp, body := get("/healthz", map[string]string{"X-Forwarded-For": "nobody"}, "collie.example")
		if resp.StatusCode != 400 || !strings.Contains(body, "bad-forwarded") || !strings.Contains(body, "X-Forwarded-For") || !strings.Contains(body, "proxy_headers") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	})
	t.Run("healthz", func(t *testing.T) {
		for _, host := range []string{"", "collie.example", "localhost" + f.srv.URL[strings.LastIndex(f.srv.URL, ":"):]} {
			resp, body := get("/healthz", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "collie.example"}, host)
			if host == "" {
				resp, body = get("/healthz", nil, "")
			}
			if resp.StatusCode != 200 || body != view.HealthzBody || resp.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("Host %q: %d %q %v", host, resp.StatusCode, body, resp.Header)
			}
		}
		resp, _ := get("/healthz", nil, "rebind.invalid")
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Fatalf("/healthz for another host: %d", resp.StatusCode)
		}
	})
	t.Run("read_from_another_site", func(t *testing.T) {
		for _, path := range []string{"/api/v1/state", "/", "/app.js", "/healthz"} {
			resp, body := get(path, map[string]string{"Origin": "https://evil.invalid", "Authorization": "Bearer " + f.cred}, "")
			if resp.StatusCode != 403 || !strings.Contains(body, "cross-site") || strings.Contains(body, "demo") {
				t.Errorf("GET %s with a foreign Origin: %d %s", path, resp.StatusCode, body)
			}
		}
		resp, _ := get("/api/v1/state", map[string]string{"Origin": "https://collie.example", "Authorization": "Bearer " + f.cred}, "")
		if resp.StatusCode != 200 {
			t.Errorf("GET with the public origin: %d", resp.StatusCode)
		}
	})
	t.Run("secure_cookie_through_proxy", func(t *testing.T) {
		p, err := f.pairs.New()
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/pair", strings.NewReader(`{"secret":"`+p.Secret+`","name":"proxied"}`))
		req.Host = "collie.example"
		for k, v := range map[string]string{WriteHeader: "1", "Origin": "https://collie.example", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "collie.example", "X-Forwarded-For": "203.0.113.9"} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
			t.Fatalf("%d cookies %v, want a Secure cookie", resp.StatusCode, resp.Cookies())
		}
	})
}

// TestListen_PublicURL: public_url's host is on the listener's list, on
// the plain loopback listener (behind a proxy) and on a TLS listener with
// the user's own certificate (the LAN recipe), and proxy_headers needs a
// loopback listener and public_url.
func TestListen_PublicURL(t *testing.T) {
	t.Run("behind_proxy", func(t *testing.T) {
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", PublicURL: "https://collie.example", ProxyHeaders: policy.ProxyXForwarded}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.Public != "https://collie.example" || !strings.Contains(strings.Join(l.Site.Hosts(), " "), "collie.example:443") || l.Site.Proxy() != policy.ProxyXForwarded {
			t.Fatalf("public %q hosts %v proxy %q", l.Public, l.Site.Hosts(), l.Site.Proxy())
		}
	})
	t.Run("proxy_headers_need_loopback_and_public_url", func(t *testing.T) {
		for _, c := range []ListenConfig{{Addr: "127.0.0.1:0", ProxyHeaders: policy.ProxyXForwarded}, {Addr: "0.0.0.0:0", PublicURL: "https://collie.example", ProxyHeaders: policy.ProxyXForwarded}} {
			if l, err := Listen(c, t.TempDir()); err == nil || !strings.Contains(err.Error(), "proxy_headers") {
				if l != nil {
					l.Close()
				}
				t.Errorf("%+v: err = %v", c, err)
			}
		}
	})
	t.Run("lan_own_certificate", func(t *testing.T) {
		// The LAN recipe: the listener serves TLS with the user's own
		// certificate for the name phones use; here that name is mapped to
		// loopback by the client's dialer.
		dir := t.TempDir()
		ca := tlstest.NewCA(t, dir)
		certFile, keyFile := writePair(t, dir, ca.Issue(t, "collie.lan.test"))
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(l.Addr().String())
		l.Close()
		l, err = Listen(ListenConfig{Addr: "127.0.0.1:" + port, CertFile: certFile, KeyFile: keyFile, PublicURL: "https://collie.lan.test:" + port}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
		if err != nil {
			t.Fatal(err)
		}
		api := NewAPI(Options{Backend: &agentSide{view: demoView(1)}, Store: st, Pairings: store.NewPairings(nil), Site: l.Site, Log: slog.New(slog.DiscardHandler)})
		srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close(); api.Close() })
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.PEM)
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, l.Addr().String())
			}}}
		resp, err := c.Get(l.Public + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != view.HealthzBody {
			t.Fatalf("%s/healthz: %d %q", l.Public, resp.StatusCode, b)
		}
		resp, err = c.Get("https://collie.lan.test:" + port + "/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the web app at the public URL: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}
