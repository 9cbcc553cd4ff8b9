package device

import (
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestSignInClearedInChromium_D6: a browser whose cookie is gone (cleared,
// or expired) is told it is not paired any more, never that it was
// revoked; a revoked one is told it was revoked. A device paired without
// a name is named after its browser and platform (Chrome on Linux here).
func TestSignInClearedInChromium_D6(t *testing.T) {
	chromium := needChromium(t)
	back := &browserBackend{view: browserView(agentSnapshot(t))}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs := store.NewPairings(nil)
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Site: siteOf(t, srv), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	t.Cleanup(api.Close)
	b := newTab(t, chromium, "")
	pair := func(what string) {
		t.Helper()
		p, err := pairs.New()
		if err != nil {
			t.Fatal(err)
		}
		b.do(what,
			chromedp.Navigate(srv.URL+"/#pair="+p.Secret),
			chromedp.WaitVisible(chromedp.ID("pair-code")),
			chromedp.Click(chromedp.ID("pair-submit")), // the name left empty
			chromedp.WaitVisible(chromedp.CSS(`[data-question="q-yes"]`)))
	}
	heading := func(id string) string {
		var s string
		b.eval(`(document.getElementById('`+id+`') || {}).textContent || ''`, &s)
		return s
	}

	pair("pair without a name")
	if devs := st.List(); len(devs) != 1 || devs[0].Name != "Chrome on Linux" {
		t.Fatalf("the device paired without a name is %+v; want it named Chrome on Linux", devs)
	}

	t.Run("cookie_cleared_is_not_revoked", func(t *testing.T) {
		b.t = t
		if _, err := chromedp.Call(b.ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
			t.Fatalf("clear the cookies: %v", err)
		}
		b.do("open the page again",
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.ID("signed-out")))
		if got := heading("signed-out"); got != "This browser is not paired any more" {
			t.Fatalf("the page says %q", got)
		}
		if got := heading("revoked"); got != "" {
			t.Fatalf("a browser whose cookie is gone is told %q", got)
		}
		b.shoot("collie-signed-out.png")
	})

	t.Run("revoked_is_revoked", func(t *testing.T) {
		b.t = t
		first := st.List()[0].ID
		pair("pair again")
		var second string
		for _, d := range st.List() {
			if d.ID != first {
				second = d.ID
			}
		}
		if second == "" {
			t.Fatalf("pairing again made no new device: %+v", st.List())
		}
		if err := api.Revoke(second); err != nil {
			t.Fatal(err)
		}
		b.do("see the revoked message", chromedp.WaitVisible(chromedp.ID("revoked")))
		if got := heading("revoked"); got != "This device was revoked; pair it again" {
			t.Fatalf("the revoked message reads %q", got)
		}
		// A reload keeps saying so: the bridge, not the page's memory,
		// tells a revoked device from a cleared one.
		b.do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("revoked")))
	})
}
