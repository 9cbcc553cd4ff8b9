package device

import (
	"bytes"
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

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/caddytest"
	"github.com/collie-linux/collie/internal/testkit/testbuf"
)

// TestCaddyInChromium_D6 is docs/phone.md's Caddy recipe, for real:
// Debian's caddy with tls internal in front of the bridge's loopback
// listener, chromium trusting Caddy's authority and reaching the proxy by
// a name mapped to loopback. Over public_url the device pairs (its cookie
// Secure, as the forwarded scheme says), the app is installable (no
// installability errors; the manifest's icons load), its service worker
// is registered and active, a question is answered by a tap (D6) and
// reaches the agent; with the bridge down the installed app still opens
// from its shell and says the bridge cannot be reached, and the shell
// cache holds nothing of the API.
func TestCaddyInChromium_D6(t *testing.T) {
	chromium := needChromium(t)
	caddy := caddytest.Need(t)

	const name = "collie.invalid"
	port := caddytest.FreePort(t) // Caddy's
	public := "https://" + name + ":" + port
	l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", ProxyHeaders: policy.ProxyXForwarded, PublicURL: public}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if l.Public != public {
		t.Fatalf("the listener's public URL is %q, want %q", l.Public, public)
	}
	back := &browserBackend{view: browserView(agentSnapshot(t))}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs := store.NewPairings(nil)
	var journal testbuf.Buffer
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Site: l.Site, Log: slog.New(slog.NewTextHandler(&journal, nil))})
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	stopBridge := func() { srv.Close(); api.Close() }
	t.Cleanup(stopBridge)
	proxy := caddytest.Start(t, caddy, name, port, l.Addr().String())
	root, spkis, stopCaddy := proxy.Root, proxy.SPKIs, proxy.Stop

	// /healthz through Caddy, as collie doctor fetches it.
	pool := x509.NewCertPool()
	pool.AddCert(root)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, "127.0.0.1:"+port)
		}}}
	resp, err := hc.Get(public + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != view.HealthzBody {
		t.Fatalf("%s/healthz through caddy: %d %q", public, resp.StatusCode, body)
	}

	// Chromium trusts Caddy's authority (its root and intermediate) for
	// this profile, as a phone with Caddy's root installed does.
	b := newTab(t, chromium, "MAP "+name+" 127.0.0.1", chromedp.Flag("ignore-certificate-errors-spki-list", spkis))

	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	b.do("pair over public_url",
		chromedp.Navigate(public+"/#pair="+p.Secret),
		chromedp.WaitVisible(chromedp.ID("pair-code")),
		chromedp.SetValue(chromedp.ID("pair-name"), "Phone through Caddy"),
		chromedp.Click(chromedp.ID("pair-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-question="q-yes"]`)))
	if devs := st.List(); len(devs) != 1 || devs[0].Name != "Phone through Caddy" {
		t.Fatalf("paired devices: %+v", devs)
	}
	cookies, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{public + "/api/v1/state"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 1 || cookies.Cookies[0].Name != CookieName || !cookies.Cookies[0].Secure || !cookies.Cookies[0].HTTPOnly {
		t.Fatalf("the device's cookie through the proxy: %+v", cookies.Cookies)
	}

	t.Run("service_worker_registered", func(t *testing.T) {
		b.t = t
		b.until("the service worker activated", `navigator.serviceWorker.getRegistration('/').then((r) => !!(r && r.active && r.active.state === 'activated'))`)
		var url string
		b.eval(`navigator.serviceWorker.getRegistration('/').then((r) => r.active.scriptURL)`, &url)
		if url != public+"/sw.js" {
			t.Fatalf("the worker is %q", url)
		}
	})

	t.Run("installable", func(t *testing.T) {
		b.t = t
		m, err := chromedp.Call(b.ctx, page.GetAppManifest, page.GetAppManifestParams{})
		if err != nil {
			t.Fatal(err)
		}
		if m.URL != public+"/manifest.webmanifest" || len(m.Errors) != 0 || m.Manifest == nil || m.Manifest.Name != "Collie" {
			t.Fatalf("manifest %s: errors %+v, %+v", m.URL, m.Errors, m.Manifest)
		}
		var errs []string
		deadline := time.Now().Add(loadGuard)
		for {
			r, err := chromedp.Call(b.ctx, page.GetInstallabilityErrors, cdp.Empty{})
			if err != nil {
				t.Fatal(err)
			}
			errs = errs[:0]
			for _, e := range r.InstallabilityErrors {
				errs = append(errs, e.ErrorID)
			}
			if len(errs) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond) // polling chromium's own check; nothing to wait on
		}
		if len(errs) != 0 {
			t.Fatalf("chromium says the app is not installable: %v", errs)
		}
	})

	t.Run("D6_answer_a_question", func(t *testing.T) {
		b.t = t
		b.shoot("collie-caddy-question.png")
		b.do("tap Yes", chromedp.Click(chromedp.CSS(`[data-question="q-yes"] [data-answer="yes"]`)))
		w := back.waitForwards(t, 1)
		a, ok := w[0].req.(*wire.AnswerRequest)
		if !ok || w[0].path != wire.AnswerPath || a.Question != "q-yes" || len(a.OptionIDs) != 1 || a.OptionIDs[0] != wire.Yes {
			t.Fatalf("the agent got %+v", w[0])
		}
	})

	t.Run("shell_caches_no_agent_data", func(t *testing.T) {
		b.t = t
		var keys []string
		b.eval(`(async () => { const out = []; for (const n of await caches.keys()) for (const r of await (await caches.open(n)).keys()) out.push(new URL(r.url).pathname); return out.sort(); })()`, &keys)
		want := "/ /app.css /app.js /cards.js /dom.js /icon-192.png /icon.svg /live.js /manifest.webmanifest /markdown.js /notify.js /pairing.js /phone.css /view.js /writes.js"
		if strings.Join(keys, " ") != want {
			t.Fatalf("the service worker's cache holds %q, want only the shell %q", keys, want)
		}
	})

	t.Run("offline_says_the_bridge_cannot_be_reached", func(t *testing.T) {
		b.t = t
		// The bridge stops; Caddy answers 502 for it.
		stopBridge()
		b.do("reload with the bridge down", chromedp.Reload())
		b.until("the offline notice", `document.body.innerText.includes('The bridge cannot be reached')`)
		b.shoot("collie-caddy-offline-bridge-down.png")
		// Caddy stops too: the page comes from the worker's shell.
		stopCaddy()
		b.do("reload with nothing answering", chromedp.Reload())
		b.until("the offline notice from the shell", `document.body.innerText.includes('The bridge cannot be reached')`)
		if text := b.text(); strings.Contains(text, "Deploy to production") {
			t.Fatalf("agent data shown offline: %q", text)
		}
	})
	if log := journal.String(); strings.Contains(log, p.Secret) || bytes.Contains([]byte(log), []byte("wrong-host")) {
		t.Errorf("the journal: %s", log)
	}
}
