package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// TestPublicURL_D6: the public_url row says whether phones have an
// address and, with the daemon running, whether the bridge answers its
// /healthz there, over real TLS: a certificate this machine does not
// trust, one for another name, a server that is not the bridge, a bridge
// that refuses the name, a name that does not resolve.
func TestPublicURL_D6(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	serve := func(t *testing.T, cert tls.Certificate, h http.HandlerFunc) string {
		srv := httptest.NewUnstartedServer(h)
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
		srv.StartTLS()
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	bridge := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Host != "collie.example.test" {
			http.Error(w, "wrong-host", http.StatusMisdirectedRequest)
			return
		}
		io.WriteString(w, view.HealthzBody)
	}
	good := ca.Issue(t, "collie.example.test")
	const public = "[devices]\npublic_url = \"https://collie.example.test\"\nproxy_headers = \"x-forwarded\"\n"
	tests := []struct {
		name, toml string
		cert       *tls.Certificate
		handler    http.HandlerFunc
		plain      bool // the address does not speak TLS
		noDNS      bool
		daemonDown bool
		status     Status
		message    string
		fix        string
	}{
		{name: "unset_loopback", toml: "", status: OK, message: "not set: the pairing link is 127.0.0.1:8780, which only this machine can open; to pair a phone, set public_url in [devices]"},
		{name: "unset_lan", toml: "[devices]\nlisten = \"0.0.0.0:8780\"\n", status: OK, message: "not set: phones get the listener's own address (0.0.0.0:8780), under a self-signed certificate"},
		{name: "off", toml: "[devices]\nlisten = \"\"\n", status: OK, message: "the device API is off"},
		{name: "loopback_public_url", toml: "[devices]\npublic_url = \"https://localhost:8443\"\n", status: Warn, message: "https://localhost:8443 is a loopback address"},
		{name: "daemon_down", toml: public, daemonDown: true, status: Skip, message: "skipped: the daemon is not running"},
		{name: "answers", toml: public, cert: &good, handler: bridge, status: OK, message: "https://collie.example.test: the bridge answers there"},
		{name: "proxy_headers_not_read", toml: "[devices]\npublic_url = \"https://collie.example.test\"\n", cert: &good, handler: bridge, status: Warn,
			message: "does not read the proxy's forwarded headers", fix: `set proxy_headers = "x-forwarded"`},
		{name: "own_listener_needs_no_proxy_headers", toml: "[devices]\nlisten = \"0.0.0.0:8780\"\npublic_url = \"https://collie.example.test\"\n", cert: &good, handler: bridge, status: OK,
			message: "the bridge answers there"},
		{name: "untrusted_certificate", toml: public, cert: ptr(tlstest.SelfSigned(t, "collie.example.test")), handler: bridge, status: Fail,
			message: `the certificate at https://collie.example.test is signed by "collie.example.test", an authority this machine does not trust`, fix: "install your own authority's root on this machine"},
		{name: "bridge_self_signed", toml: public, cert: ptr(bridgeCert(t, "collie.example.test")), handler: bridge, status: Fail,
			message: "the certificate at https://collie.example.test is the bridge's own self-signed one (tls_cert is not set)", fix: "set tls_cert and tls_key in [devices]"},
		{name: "certificate_for_another_name", toml: public, cert: ptr(ca.Issue(t, "other.example.test")), handler: bridge, status: Fail,
			message: "the certificate at https://collie.example.test is not for collie.example.test", fix: "get a certificate for collie.example.test"},
		{name: "not_the_bridge", toml: public, cert: &good, handler: func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "welcome to nginx") }, status: Fail,
			message: "https://collie.example.test/healthz answered 200, and not as Collie's bridge does", fix: "point the proxy"},
		{name: "bridge_refuses_the_name", toml: public, cert: &good, handler: func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "wrong-host", http.StatusMisdirectedRequest)
		}, status: Fail, message: "refused its host name: the daemon runs with another public_url", fix: "systemctl --user restart collie"},
		{name: "plain_http_there", toml: public, plain: true, handler: bridge, status: Fail, message: "https://collie.example.test does not speak TLS", fix: "put a TLS proxy"},
		{name: "name_does_not_resolve", toml: "[devices]\npublic_url = \"https://collie.invalid\"\n", noDNS: true, status: Fail, message: "this machine cannot resolve collie.invalid", fix: "an entry on your router's or LAN's DNS server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := healthy(t)
			if err := os.WriteFile(e.Paths.ConfigFile(), []byte(tt.toml), 0o600); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.cert != nil:
				e.Fetch = newFetch(roots, serve(t, *tt.cert, tt.handler))
			case tt.plain:
				srv := httptest.NewServer(tt.handler)
				t.Cleanup(srv.Close)
				e.Fetch = newFetch(roots, srv.Listener.Addr().String())
			case tt.noDNS:
				e.Fetch = newFetch(roots, "")
			default:
				e.Fetch = func(context.Context, string) (int, []byte, error) { return 0, nil, errors.New("no fetch expected") }
			}
			if tt.daemonDown {
				e.Daemon = fakeDaemon{err: control.ErrNotRunning}
			}
			rows := run(t, e, "public_url")
			if len(rows) != 1 || rows[0].Status != tt.status || !strings.Contains(rows[0].Message, tt.message) || !strings.Contains(rows[0].Fix, tt.fix) || (tt.status != OK && rows[0].Fix == "") {
				t.Fatalf("rows = %+v;\nwant one %s row with %q, fix with %q", rows, tt.status, tt.message, tt.fix)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// bridgeCert is the certificate the bridge makes for itself without
// tls_cert (device.SelfSigned), for name.
func bridgeCert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	c, err := device.SelfSigned(t.TempDir(), []string{name}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}
