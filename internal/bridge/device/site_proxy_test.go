package device

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// TestSite_Proxy_D6: behind a reverse proxy on this machine, forwarded
// headers are read only when the site trusts that kind and only from a
// loopback peer; the host the browser used must be the listener's or
// public_url's, as must the connection's own Host, so a page on this
// machine cannot pass off a rebound name by adding a header.
func TestSite_Proxy_D6(t *testing.T) {
	mk := func(kind string) *Site {
		s := NewSite("http", "127.0.0.1", "8780")
		s.Allow("https", "collie.example", "")
		s.TrustProxy(kind)
		return s
	}
	xf, fw, none := mk(ProxyXForwarded), mk(ProxyForwarded), mk("")
	caddy := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "collie.example", "X-Forwarded-For": "203.0.113.9"}
	with := func(base map[string]string, k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	tests := []struct {
		name   string
		site   *Site
		peer   string
		host   string
		hdr    map[string]string
		bad    bool   // front refuses it: the proxy is set up wrong
		hostOK bool   // the Host check passes
		source string // as the per-source limits see it
		secure bool   // the browser used https
	}{
		{"caddy", xf, "127.0.0.1:40000", "collie.example", caddy, false, true, "203.0.113.9", true},
		{"caddy_ipv6_loopback_peer", xf, "[::1]:40000", "collie.example", caddy, false, true, "203.0.113.9", true},
		{"proxy_rewrites_host_to_upstream", xf, "127.0.0.1:40000", "127.0.0.1:8780", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}, false, true, "203.0.113.9", true},
		{"appended_for_list_rightmost", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-For", "198.51.100.1, 203.0.113.9"), false, true, "203.0.113.9", true},
		{"for_ipv6_is_its_64", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-For", "2001:db8:1:2:3:4:5:6"), false, true, "2001:db8:1:2::/64", true},
		{"local_page_rebound_name_forges_host", xf, "127.0.0.1:40000", "rebind.invalid:8780", caddy, false, false, "203.0.113.9", true},
		{"forwarded_host_another_name", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Host", "evil.invalid"), false, false, "203.0.113.9", true},
		{"forwarded_host_over_http", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Proto", "http"), false, false, "203.0.113.9", false},
		{"forwarded_host_wrong_port", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Host", "collie.example:8443"), false, false, "203.0.113.9", true},
		{"peer_beyond_loopback_ignored", xf, "192.0.2.5:40000", "collie.example", with(caddy, "X-Forwarded-Host", "evil.invalid"), false, true, "192.0.2.5", false},
		{"not_trusted_ignored", none, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Host", "evil.invalid"), false, true, "127.0.0.1", false},
		{"no_headers_direct", xf, "127.0.0.1:40000", "127.0.0.1:8780", nil, false, true, "127.0.0.1", false},
		{"bad_for", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-For", "not-an-ip"), true, false, "", false},
		{"bad_for_zone", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-For", "fe80::1%eth0"), true, false, "", false},
		{"bad_proto", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Proto", "ftp"), true, false, "", false},
		{"bad_host", xf, "127.0.0.1:40000", "collie.example", with(caddy, "X-Forwarded-Host", "a@collie.example"), true, false, "", false},
		{"rfc7239", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "for=203.0.113.9;proto=https;host=collie.example"}, false, true, "203.0.113.9", true},
		{"rfc7239_last_element", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": `for=198.51.100.1;host=evil.invalid, for="[2001:db8::1]:4711";proto=https;host="collie.example"`}, false, true, "2001:db8::/64", true},
		{"rfc7239_obfuscated_for", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "for=_hidden;proto=https"}, false, true, "127.0.0.1", true},
		{"rfc7239_ignores_x_forwarded", fw, "127.0.0.1:40000", "collie.example", caddy, false, true, "127.0.0.1", false},
		{"x_forwarded_ignores_rfc7239", xf, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "for=198.51.100.1;proto=https;host=evil.invalid"}, false, true, "127.0.0.1", false},
		{"rfc7239_other_host", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "for=203.0.113.9;proto=https;host=evil.invalid"}, false, false, "203.0.113.9", true},
		{"rfc7239_empty_value", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "for=;proto=https"}, true, false, "", false},
		{"rfc7239_pair_twice", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": "proto=https;proto=http"}, true, false, "", false},
		{"rfc7239_unterminated_quote", fw, "127.0.0.1:40000", "collie.example", map[string]string{"Forwarded": `for="203.0.113.9`}, true, false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/state", nil)
			r.RemoteAddr, r.Host = tt.peer, tt.host
			for k, v := range tt.hdr {
				r.Header.Set(k, v)
			}
			r2, err := tt.site.front(r)
			if tt.bad {
				if err == nil {
					t.Fatalf("front took it")
				}
				return
			}
			if err != nil {
				t.Fatalf("front: %v", err)
			}
			if got := tt.site.hostOK(r2); got != tt.hostOK {
				t.Errorf("hostOK = %v, want %v", got, tt.hostOK)
			}
			if got := sourceOf(r2); got != tt.source {
				t.Errorf("source = %q, want %q", got, tt.source)
			}
			if got := secure(r2); got != tt.secure {
				t.Errorf("secure = %v, want %v", got, tt.secure)
			}
		})
	}
}

// TestBehindProxy_D6: through the API's own router, a proxy's malformed
// header is refused with what to fix; a pairing forwarded as https gets a
// Secure cookie; a read from another site's page is refused before any
// handler; /healthz answers at the listener's and public_url's host and
// nowhere else, and holds nothing.
func TestBehindProxy_D6(t *testing.T) {
	f := newFixture(t)
	f.api.site.Allow("https", "collie.example", "")
	f.api.site.TrustProxy(ProxyXForwarded)
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
			if resp.StatusCode != 200 || body != HealthzBody || resp.Header.Get("Cache-Control") != "no-store" {
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
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", PublicURL: "https://collie.example", ProxyHeaders: ProxyXForwarded}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.Public != "https://collie.example" || !strings.Contains(strings.Join(l.Site.Hosts(), " "), "collie.example:443") || l.Site.proxy != ProxyXForwarded {
			t.Fatalf("public %q hosts %v proxy %q", l.Public, l.Site.Hosts(), l.Site.proxy)
		}
	})
	t.Run("proxy_headers_need_loopback_and_public_url", func(t *testing.T) {
		for _, c := range []ListenConfig{{Addr: "127.0.0.1:0", ProxyHeaders: ProxyXForwarded}, {Addr: "0.0.0.0:0", PublicURL: "https://collie.example", ProxyHeaders: ProxyXForwarded}} {
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
		if resp.StatusCode != 200 || string(b) != HealthzBody {
			t.Fatalf("%s/healthz: %d %q", l.Public, resp.StatusCode, b)
		}
		resp, err = c.Get("https://collie.lan.test:" + port + "/")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("the web app at the public URL: %v %v", resp, err)
		}
		resp.Body.Close()
	})
}

// FuzzForwarded: whatever a proxy's headers hold, reading them never
// panics, and what is taken is a host the Host check can parse and a
// client address without a zone.
func FuzzForwarded(f *testing.F) {
	for _, s := range []string{"for=203.0.113.9;proto=https;host=collie.example", `for="[2001:db8::1]:4711"`, `for=_x, for=unknown;proto=http`,
		`host="a\"b"`, "203.0.113.9, 198.51.100.1", "https", "proto=https;proto=http", `for="`, ",,;;="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h := http.Header{}
		h.Set("Forwarded", s)
		h.Set("X-Forwarded-For", s)
		h.Set("X-Forwarded-Host", s)
		h.Set("X-Forwarded-Proto", s)
		for _, v := range []func() (via, bool, error){
			func() (via, bool, error) { return forwardedHeader(h.Values("Forwarded")) },
			func() (via, bool, error) { return xForwarded(h) },
		} {
			got, ok, err := v()
			if err != nil || !ok {
				continue
			}
			if got.host != "" {
				if _, _, ok := splitHost(got.host); !ok {
					t.Fatalf("%q: host %q taken", s, got.host)
				}
			}
			if got.client.IsValid() && got.client.Zone() != "" {
				t.Fatalf("%q: client %v with a zone", s, got.client)
			}
			if got.scheme != "" && got.scheme != "http" && got.scheme != "https" {
				t.Fatalf("%q: scheme %q", s, got.scheme)
			}
		}
	})
}
