package policy

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSite_StricterThanCrossOriginProtection_D6: why the write gate keeps
// its own origin check (Site.originOK) rather than Go's
// http.CrossOriginProtection. Given every origin on the site's list as
// trusted, the standard check still lets through requests the gate must
// refuse: it takes an Origin whose host equals the request's own Host
// whatever its scheme (the Host is the page's to choose; the site's list
// is not), and it believes Sec-Fetch-Site: same-origin over an Origin that
// names another site. It also passes every GET, where the router refuses
// another site's read, and knows nothing of the local-address rule of a
// listener on every address. If this test fails, the standard check has
// become strict enough to consider again.
func TestSite_StricterThanCrossOriginProtection_D6(t *testing.T) {
	site := NewSite("http", "127.0.0.1", "8780")
	cop := http.NewCrossOriginProtection()
	for _, o := range []string{"http://127.0.0.1:8780", "http://localhost:8780", "http://[::1]:8780"} {
		if err := cop.AddTrustedOrigin(o); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, method, host, origin, fetchSite string
	}{
		{"origin_other_scheme_same_host", "POST", "127.0.0.1:8780", "https://127.0.0.1:8780", ""},
		{"same_origin_claimed_over_a_foreign_origin", "POST", "127.0.0.1:8780", "http://evil.invalid", "same-origin"},
		{"a_read_from_another_site", "GET", "127.0.0.1:8780", "http://evil.invalid", "cross-site"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, "/api/v1/pair", nil)
			r.Host = tt.host
			r.Header.Set("Origin", tt.origin)
			if tt.fetchSite != "" {
				r.Header.Set("Sec-Fetch-Site", tt.fetchSite)
			}
			la, _ := net.ResolveTCPAddr("tcp", "127.0.0.1:8780")
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(la)))
			if site.OriginOK(r) {
				t.Fatalf("the site's own check lets %s from %q through", tt.method, tt.origin)
			}
			if err := cop.Check(r); err != nil {
				t.Fatalf("http.CrossOriginProtection now refuses it too (%v): it may fit the gate", err)
			}
		})
	}
}
