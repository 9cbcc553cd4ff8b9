package policy

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
			r2, err := tt.site.Front(r)
			if tt.bad {
				if err == nil {
					t.Fatalf("front took it")
				}
				return
			}
			if err != nil {
				t.Fatalf("front: %v", err)
			}
			if got := tt.site.HostOK(r2); got != tt.hostOK {
				t.Errorf("hostOK = %v, want %v", got, tt.hostOK)
			}
			if got := Source(r2); got != tt.source {
				t.Errorf("source = %q, want %q", got, tt.source)
			}
			if got := Secure(r2); got != tt.secure {
				t.Errorf("secure = %v, want %v", got, tt.secure)
			}
		})
	}
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
