package device

import (
	"context"
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/testkit/testbuf"
)

// TestHostileOriginsInChromium: a real browser, a page that resolves to
// the bridge under another name (DNS rebinding: rebind.invalid mapped to
// 127.0.0.1), and a page on another site (evil.invalid). The rebinding
// page gets nothing, not the web app, not /api/v1/state, and none of its
// writes or pairings go through; the other site's requests are refused as
// cross-site without using up the pairing budget, so a real pairing goes
// through after its flood, and its refusals are counted in the journal
// (D6).
func TestHostileOriginsInChromium(t *testing.T) {
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
	var journal testbuf.Buffer
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Site: siteOf(t, srv),
		Log: slog.New(slog.NewTextHandler(&journal, nil))})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>a page on another site</title>")
	}))
	t.Cleanup(evil.Close)
	_, evilPort, _ := net.SplitHostPort(evil.Listener.Addr().String())

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		// The two hostile names resolve to the bridge's machine; nothing else resolves.
		chromedp.Flag("host-resolver-rules", "MAP rebind.invalid 127.0.0.1, MAP evil.invalid 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	// Start the browser on the tab's own context: a timeout's context
	// would take the browser with it when it ends.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	run := func(t *testing.T, what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		if err := chromedp.Do(tctx, a); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// results runs a script in the page that resolves to a list of strings.
	results := func(t *testing.T, script string) []string {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		out, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](script, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("run the page's script: %v", err)
		}
		return out
	}

	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	send := `{"requestId":"r","conversation":"c1","text":"from a hostile page"}`

	t.Run("rebinding_page_gets_nothing", func(t *testing.T) {
		run(t, "open the rebinding page", chromedp.Navigate("http://rebind.invalid:"+port+"/"))
		body := results(t, `Promise.resolve([document.body.innerText, String(document.scripts.length), String(!!document.getElementById('main'))])`)
		if !strings.Contains(body[0], "wrong-host") || body[1] != "0" || body[2] != "false" {
			t.Fatalf("the rebinding page was served the web app: %q", body)
		}
		// Its own script, same-origin as far as the browser knows.
		q, _ := json.Marshal(map[string]string{"pair": `{"secret":"` + p.Secret + `","name":"rebound"}`, "send": send, "cred": cred})
		got := results(t, `(async () => {
			const x = `+string(q)+`;
			const h = {'Content-Type': 'application/json', 'Collie-Write': '1'};
			const tries = [
				fetch('/api/v1/state'),
				fetch('/api/v1/state', {headers: {'Authorization': 'Bearer ' + x.cred}}),
				fetch('/app.js'),
				fetch('/api/v1/pair', {method: 'POST', headers: h, body: x.pair}),
				fetch('/api/v1/agents/demo/send', {method: 'POST', headers: Object.assign({'Authorization': 'Bearer ' + x.cred}, h), body: x.send}),
			];
			const out = [];
			for (const r of await Promise.all(tries)) out.push(r.status + ' ' + (await r.text()).slice(0, 40));
			return out;
		})()`)
		for i, r := range got {
			if !strings.HasPrefix(r, "421 ") || strings.Contains(r, "agents") {
				t.Errorf("try %d from the rebinding page: %q", i, r)
			}
		}
	})

	t.Run("other_site_is_cross_site", func(t *testing.T) {
		run(t, "open the other site's page", chromedp.Navigate("http://evil.invalid:"+evilPort+"/"))
		q, _ := json.Marshal(map[string]string{"base": "http://127.0.0.1:" + port, "pair": `{"secret":"` + p.Secret + `","name":"evil"}`, "send": send})
		got := results(t, `(async () => {
			const x = `+string(q)+`;
			const out = [];
			// Simple requests, which a browser sends without asking: 40 pairings, writes with the device's cookie if it had one.
			for (let i = 0; i < 40; i++) {
				await fetch(x.base + '/api/v1/pair', {method: 'POST', mode: 'no-cors', body: x.pair});
			}
			await fetch(x.base + '/api/v1/agents/demo/send', {method: 'POST', mode: 'no-cors', credentials: 'include', body: x.send});
			// With the write header the browser must ask first (CORS preflight), which the bridge never grants.
			try {
				const r = await fetch(x.base + '/api/v1/pair', {method: 'POST', headers: {'Collie-Write': '1', 'Content-Type': 'application/json'}, body: x.pair});
				out.push('answered ' + r.status);
			} catch (e) {
				out.push('blocked');
			}
			return out;
		})()`)
		if len(got) != 1 || got[0] != "blocked" {
			t.Fatalf("a cross-site request with the write header: %q", got)
		}
	})

	// Nothing went through, and the pairing secret is still good: the real
	// pairing, from the same address as the pages, is not kept at 429.
	if n := len(back.forwards()); n != 0 || len(st.List()) != 1 {
		t.Fatalf("hostile pages got through: %d writes, %d devices", n, len(st.List()))
	}
	status, body := httpDo(t, "POST", srv.URL+"/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"real phone"}`)
	if status != 200 {
		t.Fatalf("the real pairing after the hostile pages: %d %s", status, body)
	}
	api.Close()
	log := journal.String()
	// The 40 refused pairings: the first at once, the repeats as one count.
	counted := 0
	for _, m := range regexp.MustCompile(`msg="refused a pairing attempt" source=127\.0\.0\.1 code=cross-site .* count=(\d+)`).FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		counted += n
	}
	if counted != 40 || !strings.Contains(log, "code=wrong-host") || strings.Count(log, "refused a pairing attempt") != 2 {
		t.Errorf("the journal counts %d refused pairings, want 40 in two lines, and the rebinding page's requests:\n%s", counted, log)
	}
	if strings.Contains(log, cred) || strings.Contains(log, p.Secret) {
		t.Fatal("a credential or pairing secret reached the journal")
	}
}
