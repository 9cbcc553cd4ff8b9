package device

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// pushStubs stand in for the browser's push service, which chromium cannot
// reach here: pushManager.subscribe returns the double's subscription and
// records the key it was given; requestPermission counts its calls. The
// service worker, its registration and the notifications are chromium's own.
const pushStubs = `(() => {
  const SUB = %SUB%;
  const seen = { perm: 0, key: null };
  Object.defineProperty(window, '__pushTest', { value: seen });
  Notification.requestPermission = function () { seen.perm++; return Promise.resolve('granted'); };
  let current = null;
  PushManager.prototype.getSubscription = function () { return Promise.resolve(current); };
  PushManager.prototype.subscribe = function (opts) {
    const key = new Uint8Array(opts.applicationServerKey);
    seen.key = Array.from(key);
    seen.userVisibleOnly = opts.userVisibleOnly;
    current = { endpoint: SUB.endpoint, options: { applicationServerKey: key.buffer, userVisibleOnly: true },
      toJSON() { return SUB; }, unsubscribe() { current = null; return Promise.resolve(true); } };
    return Promise.resolve(current);
  };
})();`

// TestNotificationsInChromium_D6: in a real chromium, after pairing the
// page offers notifications without asking the browser for anything; only
// the tap on "Turn on notifications" asks, and the page then posts a
// subscription made with the bridge's VAPID key, which the bridge stores
// as this device's. A question's push, encrypted by the provider and
// opened by the push-service double, delivered to the page's real service
// worker, shows as a notification whose tap opens this app; a push naming
// another site opens this app's start page instead (D6).
func TestNotificationsInChromium_D6(t *testing.T) {
	chromium := needChromium(t)
	back := &browserBackend{view: browserView(agentSnapshot(t))}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := pushtest.New(t, nil)
	provider, err := webpush.New(webpush.Options{StateDir: t.TempDir(), Subscriptions: st, Client: svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	sub := svc.Subscribe(t, provider.PublicKey())
	pairs := store.NewPairings(nil)
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Site: siteOf(t, srv), WebPushKey: provider.PublicKey()})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	var mu sync.Mutex
	var console []string
	consoleEvents := chromedp.Console(ctx)
	go func() {
		for m, err := range consoleEvents {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, string(m.Type)+": "+m.Text)
			mu.Unlock()
		}
	}()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		if err := chromedp.Do(tctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	eval := func(expr string, v any) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		raw, err := chromedp.Run(tctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("evaluate %s: %v", expr, err)
		}
		if err := json.Unmarshal(raw, v); err != nil {
			t.Fatalf("evaluate %s: %s: %v", expr, raw, err)
		}
	}
	origin := srv.URL
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingPrompt, Origin: origin}); err != nil {
		t.Fatalf("set the notification permission to prompt: %v", err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: strings.Replace(pushStubs, "%SUB%", string(sub.JSON()), 1)}); err != nil {
		t.Fatal(err)
	}

	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	do("pair, then see the offer",
		chromedp.Navigate(origin+"/#pair="+p.Secret),
		chromedp.WaitVisible(chromedp.ID("pair-code")),
		chromedp.SetValue(chromedp.ID("pair-name"), "Test phone"),
		chromedp.Click(chromedp.ID("pair-submit")),
		chromedp.WaitVisible(chromedp.CSS(`#notify[data-state="offer"] #notify-on`)))
	// Screenshots at 390×844 for a human to look at (COLLIE_WEB_SCREENSHOT_DIR,
	// as the web app's test).
	shots := os.Getenv("COLLIE_WEB_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	shoot := func(name string) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		buf, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	shoot("collie-web-notify-offer.png")
	var perm int
	if eval(`window.__pushTest.perm`, &perm); perm != 0 {
		t.Fatalf("the page asked for notification permission %d times before any tap", perm)
	}
	devs := st.List()
	if len(devs) != 1 || len(st.PushTargets()) != 0 {
		t.Fatalf("before the tap: devices %+v, subscriptions %+v", devs, st.PushTargets())
	}

	// The tap: the permission (granted now, as the user's answer to the
	// prompt would), the subscription, the bridge.
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "notifications"}, Setting: browser.PermissionSettingGranted, Origin: origin}); err != nil {
		t.Fatal(err)
	}
	do("tap Turn on notifications", chromedp.Click(chromedp.ID("notify-on")))
	if tctx, cancel := context.WithTimeout(ctx, loadGuard); chromedp.Do(tctx, chromedp.WaitVisible(chromedp.CSS(`#notify[data-state="on"] #notify-off`))) != nil {
		cancel()
		var state []string
		eval(`[document.getElementById('notify').dataset.state, document.getElementById('notify').textContent]`, &state)
		mu.Lock()
		t.Fatalf("after the tap the offer shows %q; console: %q", state, console)
	} else {
		cancel()
	}
	shoot("collie-web-notify-on.png")
	var seen struct {
		Perm            int    `json:"perm"`
		Key             []byte `json:"-"`
		KeyList         []int  `json:"key"`
		UserVisibleOnly bool   `json:"userVisibleOnly"`
	}
	eval(`window.__pushTest`, &seen)
	key, _ := base64.RawURLEncoding.DecodeString(provider.PublicKey())
	for _, b := range seen.KeyList {
		seen.Key = append(seen.Key, byte(b))
	}
	if seen.Perm != 1 || string(seen.Key) != string(key) || !seen.UserVisibleOnly {
		t.Fatalf("after the tap: asked %d times, subscribed with key %x (want %x), userVisibleOnly %v", seen.Perm, seen.Key, key, seen.UserVisibleOnly)
	}
	targets := st.PushTargets()
	if len(targets) != 1 || targets[0].Device != devs[0].ID || targets[0].Sub.Endpoint != sub.Endpoint ||
		targets[0].Sub.Keys.P256dh != sub.P256dh || targets[0].Sub.Keys.Auth != sub.Auth {
		t.Fatalf("the bridge holds %+v, want the page's subscription %s for %s", targets, sub.JSON(), devs[0].ID)
	}

	// A question's push, from the provider through the double, to the
	// page's service worker.
	regs := make(chan serviceworker.RegistrationID, 8)
	swEvents := chromedp.Events(ctx, serviceworker.WorkerRegistrationUpdated)
	go func() {
		for ev, err := range swEvents {
			if err != nil {
				return
			}
			for _, r := range ev.Registrations {
				if r.ScopeURL == origin+"/" && !r.IsDeleted {
					regs <- r.RegistrationID
				}
			}
		}
	}()
	if _, err := chromedp.Call(ctx, serviceworker.Enable, struct{}{}); err != nil {
		t.Fatal(err)
	}
	var reg serviceworker.RegistrationID
	select {
	case reg = <-regs:
	case <-time.After(loadGuard):
		t.Fatal("chromium told of no service worker registration for the app")
	}
	// A push delivered before the worker is active is dropped, silently:
	// wait for the activation (an event in the page), not for a time.
	var state string
	eval(`navigator.serviceWorker.ready.then((r) => r.active.state === 'activated' ? 'activated' :
		new Promise((done) => r.active.addEventListener('statechange', (e) => { if (e.target.state === 'activated') done('activated'); })))`, &state)
	question := push.Message{Agent: "Site deployer", Conversation: "Ship the new site", Title: "Site deployer · Ship the new site",
		Body: "A question waits for you", URL: origin + "/#q=demo", Key: "demo tc-1"}
	if err := provider.Send(ctx, question); err != nil {
		t.Fatal(err)
	}
	got := svc.Pushes()
	if len(got) != 1 || got[0].Problem != "" {
		t.Fatalf("the double got %+v", got)
	}
	deliver := func(data string) {
		t.Helper()
		if _, err := chromedp.Call(ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{Origin: origin, RegistrationID: reg, Data: data}); err != nil {
			t.Fatalf("deliver a push: %v", err)
		}
	}
	type shown struct {
		Title, Body, Tag, URL string
	}
	// notifications waits until the worker shows n notifications: each
	// push's showNotification comes when chromium runs the worker, which
	// under load is seconds after the delivery.
	// shownAfter delivers data and waits until the worker shows n
	// notifications: each push's showNotification comes when chromium runs
	// the worker, which under load is seconds after the delivery. A
	// delivery chromium drops (DeliverPushMessage landing while it is
	// still starting the worker: no push event runs at all) is repeated,
	// at most three times; repeating is harmless, a question's push
	// replaces its own notification by its tag.
	shownAfter := func(data string, n int) []shown {
		t.Helper()
		deadline := time.Now().Add(loadGuard)
		for try := 1; ; try++ {
			deliver(data)
			again := time.Now().Add(loadGuard / 4)
			for {
				var list []shown
				eval(`navigator.serviceWorker.ready.then((r) => r.getNotifications()).then((ns) =>
					ns.map((n) => ({ Title: n.title, Body: n.body, Tag: n.tag, URL: n.data && n.data.url })))`, &list)
				switch {
				case len(list) > n:
					t.Fatalf("%d notifications shown, want %d: %+v", len(list), n, list)
				case len(list) == n:
					if try > 1 {
						t.Logf("chromium dropped %d deliveries before showing the push", try-1)
					}
					return list
				case time.Now().After(deadline):
					t.Fatalf("%d notifications shown, want %d, after %d deliveries: %+v", len(list), n, try, list)
				}
				if try < 3 && time.Now().After(again) {
					break
				}
				<-time.After(50 * time.Millisecond) // polling chromium, not synchronising our own code
			}
		}
	}
	ns := shownAfter(string(got[0].Payload), 1)
	var pl struct{ Tag string }
	json.Unmarshal(got[0].Payload, &pl)
	if ns[0].Title != question.Title || ns[0].Body != question.Body || ns[0].URL != question.URL || ns[0].Tag != pl.Tag {
		t.Fatalf("shown %+v for the push %s", ns[0], got[0].Payload)
	}
	// The same question pushed again replaces its notification; a push
	// naming another site opens this app's start page, under its own tag.
	deliver(string(got[0].Payload))
	ns = shownAfter(`{"v":1,"kind":"question","title":"Elsewhere","body":"","url":"https://evil.example/","tag":"not a collie tag"}`, 2)
	for _, n := range ns {
		if n.Title == "Elsewhere" && (n.URL != origin+"/" || n.Tag != "collie") {
			t.Fatalf("a push naming another site shows %+v", n)
		}
	}

	mu.Lock()
	defer mu.Unlock()
	for _, m := range console {
		if strings.Contains(m, "Trusted Type") || strings.Contains(m, "Content Security Policy") || strings.HasPrefix(m, "error") {
			t.Errorf("console: %s", m)
		}
	}
}
