package doctor

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/testkit/caddytest"
)

// TestPublicURLCaddyTLSInternal_D6 is docs/phone.md's Caddy recipe under
// the public_url row, with Debian's real caddy and `tls internal`: while
// this machine does not trust Caddy's own authority, the row says so by
// name and gives the fix for it (trust Caddy's root here and on the
// phone), not the advice for a wrong certificate ("Caddy gets one");
// once the root is trusted, the bridge answers there.
func TestPublicURLCaddyTLSInternal_D6(t *testing.T) {
	caddy := caddytest.Need(t)
	const name = "collie.home.arpa"
	bridge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Host != name || r.Header.Get("X-Forwarded-Proto") != "https" {
			http.Error(w, "wrong-host", http.StatusMisdirectedRequest)
			return
		}
		io.WriteString(w, view.HealthzBody)
	}))
	t.Cleanup(bridge.Close)
	port := caddytest.FreePort(t)
	proxy := caddytest.Start(t, caddy, name, port, bridge.Listener.Addr().String())
	to := "127.0.0.1:" + port // what collie.home.arpa resolves to on the LAN

	e, _ := healthy(t)
	toml := "[devices]\npublic_url = \"https://" + name + "\"\nproxy_headers = \"x-forwarded\"\n"
	if err := os.WriteFile(e.Paths.ConfigFile(), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("root_not_trusted_yet", func(t *testing.T) {
		e.Fetch = newFetch(nil, to) // this machine's own authorities
		rows := run(t, e, "public_url")
		if len(rows) != 1 || rows[0].Status != Fail {
			t.Fatalf("rows = %+v; want one fail row", rows)
		}
		r := rows[0]
		t.Logf("public_url row: %s\nfix: %s", r.Message, r.Fix)
		for _, want := range []string{"the certificate at https://" + name + " is from Caddy's own authority (tls internal, \"Caddy Local Authority", "whose root this machine does not trust yet"} {
			if !strings.Contains(r.Message, want) {
				t.Errorf("message %q lacks %q", r.Message, want)
			}
		}
		for _, want := range []string{"sudo caddy trust", "update-ca-certificates", "install the same root.crt on the phone", "docs/phone.md"} {
			if !strings.Contains(r.Fix, want) {
				t.Errorf("fix %q lacks %q", r.Fix, want)
			}
		}
		// Not the advice for a certificate from the wrong authority.
		if strings.Contains(r.Fix, "Caddy get") || strings.Contains(r.Message, "an authority this machine does not trust") {
			t.Errorf("tls internal is taken for a wrong certificate: %+v", r)
		}
	})

	t.Run("root_trusted", func(t *testing.T) {
		roots := x509.NewCertPool()
		roots.AddCert(proxy.Root) // as caddy trust or update-ca-certificates would
		e.Fetch = newFetch(roots, to)
		rows := run(t, e, "public_url")
		if len(rows) != 1 || rows[0].Status != OK || !strings.Contains(rows[0].Message, "the bridge answers there") {
			t.Fatalf("rows = %+v; want the bridge answering through Caddy", rows)
		}
	})
}
