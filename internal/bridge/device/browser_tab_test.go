package device

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// tab is one headless chromium tab for the browser tests (the phone's
// address, the installable app): started with the flags every browser test
// here uses, only loopback reachable unless rules map more names to it.
type tab struct {
	t     *testing.T
	ctx   context.Context
	shots string // where screenshots go
}

// newTab starts chromium at a phone's viewport, 390×844. hostRules are
// host-resolver-rules entries before the catch-all that maps every other
// name to nothing; extra are more flags.
func newTab(t *testing.T, chromium string, hostRules string, extra ...chromedp.ExecAllocatorOption) *tab {
	t.Helper()
	rules := "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
	if hostRules != "" {
		rules = hostRules + ", " + rules
	}
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("host-resolver-rules", rules),
	}, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	shots := os.Getenv("COLLIE_WEB_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	return &tab{t: t, ctx: ctx, shots: shots}
}

// do runs actions with a deadline.
func (b *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, loadGuard)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval runs a script in the page (a promise is awaited) and decodes its
// value into v.
func (b *tab) eval(script string, v any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, loadGuard)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](script, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluate %.60s: %v", script, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		b.t.Fatalf("evaluate %.60s: %s: %v", script, raw, err)
	}
}

// until evaluates script every 50 ms until it returns true (a state the
// page reaches; loadGuard bounds the wait).
func (b *tab) until(what, script string) {
	b.t.Helper()
	deadline := time.Now().Add(loadGuard)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		var ok bool
		b.eval(script, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not within %v", what, loadGuard)
		}
	}
}

// text is the text of the page's body.
func (b *tab) text() string {
	b.t.Helper()
	var s string
	b.eval(`document.body ? document.body.innerText : ''`, &s)
	return s
}

// shoot saves the viewport as a PNG and logs where, for a human to look at.
func (b *tab) shoot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, loadGuard)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot at 390x844: %s", path)
}
