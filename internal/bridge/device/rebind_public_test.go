package device

import (
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/testkit/testbuf"
)

// TestRebindingWithPublicURLInChromium_D6: with public_url set and a
// reverse proxy's headers trusted, a page in a real chromium on a name
// that resolves to the bridge's loopback listener (DNS rebinding) still
// gets nothing, read or write, even when its script adds the forwarded
// headers that name public_url's host; the public name itself over the
// listener's plain port is not the public origin either; and another
// site's script reading the API cross-origin is refused before any route,
// as the journal shows (D6).
func TestRebindingWithPublicURLInChromium_D6(t *testing.T) {
	chromium := needChromium(t)
	back := &browserBackend{view: browserView(agentSnapshot(t))}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	pairs := store.NewPairings(nil)
	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	var journal testbuf.Buffer
	srv := httptest.NewUnstartedServer(nil)
	site := siteOf(t, srv)
	site.Allow("https", "collie.invalid", "")
	site.TrustProxy(policy.ProxyXForwarded)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Site: site, Log: slog.New(slog.NewTextHandler(&journal, nil))})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>another site</title>")
	}))
	t.Cleanup(evil.Close)
	_, evilPort, _ := net.SplitHostPort(evil.Listener.Addr().String())
	b := newTab(t, chromium, "MAP rebind.invalid 127.0.0.1, MAP collie.invalid 127.0.0.1, MAP evil.invalid 127.0.0.1")

	x, _ := json.Marshal(map[string]string{"cred": cred, "pair": `{"secret":"` + p.Secret + `","name":"rebound"}`})
	forged := `(async () => {
		const x = ` + string(x) + `;
		const fwd = {'X-Forwarded-Host': 'collie.invalid', 'X-Forwarded-Proto': 'https', 'X-Forwarded-For': '203.0.113.9'};
		const w = Object.assign({'Content-Type': 'application/json', 'Collie-Write': '1'}, fwd);
		const tries = [
			fetch('/', {headers: fwd}),
			fetch('/healthz', {headers: fwd}),
			fetch('/api/v1/state', {headers: Object.assign({'Authorization': 'Bearer ' + x.cred}, fwd)}),
			fetch('/api/v1/pair', {method: 'POST', headers: w, body: x.pair}),
			fetch('/api/v1/agents/demo/send', {method: 'POST', headers: Object.assign({'Authorization': 'Bearer ' + x.cred}, w), body: '{"requestId":"r","conversation":"c1","text":"rebound"}'}),
		];
		const out = [];
		for (const r of await Promise.all(tries)) out.push(r.status + ' ' + (await r.text()).slice(0, 60));
		return out;
	})()`
	for _, host := range []string{"rebind.invalid", "collie.invalid"} {
		t.Run(host, func(t *testing.T) {
			b.t = t
			b.do("open "+host, chromedp.Navigate("http://"+host+":"+port+"/"))
			if text := b.text(); !strings.Contains(text, "wrong-host") {
				t.Fatalf("the page at %s was served: %q", host, text)
			}
			var got []string
			b.eval(forged, &got)
			for i, r := range got {
				if !strings.HasPrefix(r, "421 ") || strings.Contains(r, "demo") {
					t.Errorf("try %d from %s with forwarded headers: %q", i, host, r)
				}
			}
		})
	}
	t.Run("cross_origin_read", func(t *testing.T) {
		b.t = t
		b.do("open the other site", chromedp.Navigate("http://evil.invalid:"+evilPort+"/"))
		var got string
		b.eval(`fetch('http://127.0.0.1:`+port+`/api/v1/state').then((r) => 'read ' + r.status, () => 'blocked')`, &got)
		if got != "blocked" {
			t.Fatalf("another site's script read the API: %s", got)
		}
	})
	if n := len(back.forwards()); n != 0 || len(st.List()) != 1 {
		t.Fatalf("rebinding pages got through: %d writes, %d devices", n, len(st.List()))
	}
	api.Close()
	log := journal.String()
	if !strings.Contains(log, "refused a read from another site's page") || !strings.Contains(log, "code=wrong-host") {
		t.Errorf("the journal lacks the refusals:\n%s", log)
	}
	if strings.Contains(log, cred) || strings.Contains(log, p.Secret) {
		t.Fatal("a credential or pairing secret reached the journal")
	}
}
