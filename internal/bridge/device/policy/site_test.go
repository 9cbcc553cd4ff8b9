package policy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestSite_HostAndOrigin: the Host must be one of the listener's own
// addresses, and Origin is compared with that list, never with the
// request's own Host.
func TestSite_HostAndOrigin(t *testing.T) {
	name, err := os.Hostname()
	if err != nil {
		testenv.Unavailablef(t, "this machine has no host name: %v", err)
	}
	name = strings.ToLower(name)
	loop := NewSite("http", "127.0.0.1", "8780")
	any := NewSite("https", "0.0.0.0", "8780")
	named := NewSite("https", "Collie.LAN", "8780")
	public := NewSite("http", "127.0.0.1", "8780")
	public.Allow("https", "collie.example.com", "") // a later [devices] public_url: one entry
	tests := []struct {
		name       string
		site       *Site
		host       string
		origin     string
		fetchSite  string
		local      string // the address the connection came in on
		hostOK, ok bool   // Host allowed; Origin (or its absence) allowed
	}{
		{"loopback_ip", loop, "127.0.0.1:8780", "", "", "127.0.0.1:8780", true, true},
		{"loopback_localhost", loop, "localhost:8780", "http://localhost:8780", "", "127.0.0.1:8780", true, true},
		{"loopback_localhost_case_and_dot", loop, "LocalHost.:8780", "http://LOCALHOST:8780", "", "127.0.0.1:8780", true, true},
		{"loopback_ipv6", loop, "[::1]:8780", "http://[::1]:8780", "", "127.0.0.1:8780", true, true},
		{"loopback_other_origin_same_host", loop, "127.0.0.1:8780", "http://evil.invalid", "", "127.0.0.1:8780", true, false},
		{"loopback_origin_other_scheme", loop, "127.0.0.1:8780", "https://127.0.0.1:8780", "", "127.0.0.1:8780", true, false},
		{"loopback_origin_other_port", loop, "127.0.0.1:8780", "http://127.0.0.1:8781", "", "127.0.0.1:8780", true, false},
		{"loopback_origin_null", loop, "127.0.0.1:8780", "null", "", "127.0.0.1:8780", true, false},
		{"loopback_origin_with_path", loop, "127.0.0.1:8780", "http://127.0.0.1:8780/x", "", "127.0.0.1:8780", true, false},
		{"loopback_cross_site_without_origin", loop, "127.0.0.1:8780", "", "cross-site", "127.0.0.1:8780", true, false},
		{"loopback_same_origin_claimed_over_foreign_origin", loop, "127.0.0.1:8780", "http://evil.invalid", "same-origin", "127.0.0.1:8780", true, false},
		{"loopback_same_site_is_not_same_origin", loop, "127.0.0.1:8780", "", "same-site", "127.0.0.1:8780", true, false},
		{"rebinding_name", loop, "rebind.invalid:8780", "http://rebind.invalid:8780", "", "127.0.0.1:8780", false, false},
		{"rebinding_name_no_port", loop, "rebind.invalid", "", "", "127.0.0.1:8780", false, true},
		{"loopback_other_port", loop, "127.0.0.1:8781", "", "", "127.0.0.1:8780", false, true},
		{"loopback_default_port", loop, "127.0.0.1", "", "", "127.0.0.1:8780", false, true},
		{"loopback_other_loopback_ip", loop, "127.0.0.2:8780", "", "", "127.0.0.1:8780", false, true},
		{"empty_host", loop, "", "", "", "127.0.0.1:8780", false, true},
		{"userinfo_in_host", loop, "127.0.0.1:8780@evil.invalid", "", "", "127.0.0.1:8780", false, true},
		{"zone_in_host", loop, "[::1%25lo]:8780", "", "", "127.0.0.1:8780", false, true},
		{"any_host_name", any, name + ":8780", "https://" + name + ":8780", "", "192.0.2.5:8780", true, true},
		{"any_localhost", any, "localhost:8780", "https://localhost:8780", "", "127.0.0.1:8780", true, true},
		{"any_own_address", any, "192.0.2.5:8780", "https://192.0.2.5:8780", "", "192.0.2.5:8780", true, true},
		{"any_own_address_ipv6", any, "[2001:db8::5]:8780", "https://[2001:db8::5]:8780", "", "[2001:db8::5]:8780", true, true},
		{"any_other_address", any, "192.0.2.6:8780", "https://192.0.2.6:8780", "", "192.0.2.5:8780", false, false},
		{"any_own_address_other_scheme", any, "192.0.2.5:8780", "http://192.0.2.5:8780", "", "192.0.2.5:8780", true, false},
		{"any_own_address_other_port", any, "192.0.2.5:8781", "", "", "192.0.2.5:8780", false, true},
		{"any_rebinding_name", any, "rebind.invalid:8780", "https://rebind.invalid:8780", "", "192.0.2.5:8780", false, false},
		{"named", named, "collie.lan:8780", "https://collie.lan:8780", "", "192.0.2.5:8780", true, true},
		{"named_not_by_ip", named, "192.0.2.5:8780", "https://192.0.2.5:8780", "", "192.0.2.5:8780", false, false},
		{"public_url", public, "collie.example.com", "https://collie.example.com", "", "127.0.0.1:8780", true, true},
		{"public_url_explicit_port", public, "collie.example.com:443", "https://collie.example.com:443", "", "127.0.0.1:8780", true, true},
		{"public_url_other_scheme", public, "collie.example.com", "http://collie.example.com", "", "127.0.0.1:8780", true, false},
		{"public_url_listener_still", public, "127.0.0.1:8780", "http://127.0.0.1:8780", "", "127.0.0.1:8780", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/api/v1/pair", nil)
			r.Host = tt.host
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			if tt.fetchSite != "" {
				r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
			}
			if tt.site.scheme == "https" {
				r.TLS = &tlsState
			}
			la, err := net.ResolveTCPAddr("tcp", tt.local)
			if err != nil {
				t.Fatal(err)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(la)))
			if got := tt.site.HostOK(r); got != tt.hostOK {
				t.Errorf("Host %q: allowed = %v, want %v (list %v)", tt.host, got, tt.hostOK, tt.site.Hosts())
			}
			if got := tt.site.OriginOK(r); got != tt.ok {
				t.Errorf("Origin %q Sec-Fetch-Site %q: allowed = %v, want %v", tt.origin, tt.fetchSite, got, tt.ok)
			}
		})
	}
	t.Run("wildcard_list", func(t *testing.T) {
		for _, want := range []string{net.JoinHostPort(name, "8780"), "localhost:8780", "127.0.0.1:8780", "[::1]:8780"} {
			if !slices.Contains(any.Hosts(), want) {
				t.Errorf("the list for 0.0.0.0 lacks %s: %v", want, any.Hosts())
			}
		}
	})
}

// FuzzSiteHost: whatever Host and Origin a request carries, the checks
// never panic, and what the loopback listener 127.0.0.1:8780 accepts is
// one of its own names with its own port.
func FuzzSiteHost(f *testing.F) {
	for _, s := range [][2]string{
		{"127.0.0.1:8780", "http://localhost:8780"}, {"[::1]:8780", "http://[::1]:8780"}, {"LOCALHOST.:8780", ""},
		{"rebind.invalid:8780", "http://rebind.invalid:8780"}, {"[::1%lo]:8780", "null"}, {"x@127.0.0.1:8780", "http://x@127.0.0.1:8780"},
		{"::1", "http://127.0.0.1:8780/"}, {"127.0.0.1:08780", "http://127.0.0.1:08780"}, {"[::ffff:127.0.0.1]:8780", "http://[::ffff:7f00:1]:8780"},
	} {
		f.Add(s[0], s[1])
	}
	site := NewSite("http", "127.0.0.1", "8780")
	own := map[string]bool{"127.0.0.1": true, "localhost": true, "::1": true}
	f.Fuzz(func(t *testing.T, host, origin string) {
		r := httptest.NewRequest("POST", "/", nil)
		r.Host = host
		r.Header.Set("Origin", origin)
		if site.HostOK(r) {
			h, port, ok := splitHost(host)
			if !ok || !own[h] || port != "8780" {
				t.Fatalf("Host %q accepted as %q port %q", host, h, port)
			}
		}
		if origin != "" && site.OriginOK(r) {
			u, err := url.Parse(origin)
			if err != nil {
				t.Fatalf("Origin %q accepted but does not parse", origin)
			}
			h, port, ok := splitHost(u.Host)
			if !ok || !own[h] || port != "8780" || u.Scheme != "http" {
				t.Fatalf("Origin %q accepted as %q port %q", origin, h, port)
			}
		}
	})
}
