package device

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"image/png"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestWebAppInChromium drives the web app in a real, headless chromium
// against the real device API: pairing with the verification code (D6),
// hostile text drawn as text (X1, X6), a tap that answers with the
// revision shown (D6, D9), always allow only on the second tap (D7), text
// refused before sending (X4), live updates, and revocation.
func TestWebAppInChromium(t *testing.T) {
	chromium := needChromium(t)
	began := time.Now()

	back := &browserBackend{view: browserView(agentSnapshot(t))}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs := store.NewPairings(nil)
	srv := httptest.NewUnstartedServer(nil) // 127.0.0.1 only
	api := NewAPI(Options{Backend: back, Store: st, Pairings: pairs, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Site: siteOf(t, srv)})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections) // the browser's event stream, before Close waits for it

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // root in CI; a throwaway profile, local pages only
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-client-side-phishing-detection", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("safebrowsing-disable-auto-update", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("password-store", "basic"),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,InterestFeedContentSuggestions"),
		// Only loopback: any name resolves to nothing.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Flag("force-color-profile", "srgb"),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	// A phone's viewport: headless chromium keeps windows at least 500 wide.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(412, 915, chromedp.EmulateMobile)); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	startup := time.Since(began)

	// Every dialog is a failure (an alert would mean agent text ran); every
	// console message is kept, to look for exceptions and CSP refusals.
	var mu sync.Mutex
	var dialogs []string
	var console []chromedp.ConsoleMessage
	dialogEvents := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogEvents {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, string(ev.Type)+": "+ev.Message)
			mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	consoleEvents := chromedp.Console(ctx)
	go func() {
		for m, err := range consoleEvents {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m)
			mu.Unlock()
		}
	}()

	do := func(t *testing.T, timeout time.Duration, what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := chromedp.Do(tctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// click taps an element with real mouse events. A render may replace
	// the element between the lookup and the tap; then it looks again.
	click := func(t *testing.T, what, sel string) {
		t.Helper()
		for try := 0; ; try++ {
			tctx, cancel := context.WithTimeout(ctx, loadGuard)
			err := chromedp.Do(tctx, chromedp.Click(chromedp.CSS(sel)))
			cancel()
			if err == nil {
				return
			}
			if try == 3 || !strings.Contains(err.Error(), "node with given id") {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}

	// text reads an element's text in one step in the page, so a render
	// that replaces the element between a query and a read cannot race it.
	text := func(t *testing.T, sel string) string {
		t.Helper()
		q, _ := json.Marshal(sel)
		deadline := time.Now().Add(loadGuard)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			tctx, cancel := context.WithTimeout(ctx, loadGuard)
			s, err := chromedp.Run(tctx, chromedp.Evaluate[*string](`(() => { const e = document.querySelector(`+string(q)+`); return e ? e.textContent : null; })()`))
			cancel()
			if err != nil {
				t.Fatalf("read %s: %v", sel, err)
			}
			if s != nil {
				return *s
			}
			if time.Now().After(deadline) {
				t.Fatalf("nothing matches %s", sel)
			}
			<-tick.C
		}
	}
	// waitText waits until the element's text contains want.
	waitText := func(t *testing.T, sel, want string) {
		t.Helper()
		deadline := time.Now().Add(loadGuard)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for {
			got := text(t, sel)
			if strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s shows %q, not %q", sel, got, want)
			}
			<-tick.C
		}
	}

	// setValue sets a field's value as typing would leave it.
	setValue := func(sel, v string) chromedp.Action[chromedp.Void] {
		q, _ := json.Marshal(sel)
		val, _ := json.Marshal(v)
		return chromedp.Evaluate[chromedp.Void](`document.querySelector(` + string(q) + `).value = ` + string(val))
	}

	shots := os.Getenv("COLLIE_WEB_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	// shoot saves a PNG of the viewport, or of one element, for a human to
	// look at; it checks only that it is a PNG.
	shoot := func(t *testing.T, name string, sel string) string {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		var buf []byte
		var err error
		if sel == "" {
			buf, err = chromedp.Run(tctx, chromedp.CaptureScreenshot())
		} else {
			buf, err = chromedp.Run(tctx, chromedp.Screenshot(chromedp.CSS(sel)))
		}
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if _, err := png.Decode(bytes.NewReader(buf)); err != nil {
			t.Fatalf("the screenshot %s is not a PNG: %v", name, err)
		}
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
		return path
	}

	// Pairing: the secret travels in the fragment, which the page reads
	// and removes at once, and the code matches collie pair's.
	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	pairStart := time.Now()
	do(t, loadGuard, "open the pairing link",
		chromedp.Navigate(srv.URL+"/#pair="+p.Secret),
		chromedp.WaitVisible(chromedp.ID("pair-code")))
	if code := text(t, "#pair-code"); code != store.VerificationCode(p.Secret) || code != p.Code {
		t.Fatalf("the page shows the code %q, collie pair shows %q", code, p.Code)
	}
	if warn := text(t, ".pair .warn"); warn != "Pair only if this matches the code in your terminal." {
		t.Fatalf("the pairing warning reads %q", warn)
	}
	shoot(t, "collie-web-pair.png", "")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || loc != srv.URL+"/" {
		t.Fatalf("the address bar still holds the secret: %q (%v)", loc, err)
	}
	do(t, loadGuard, "pair",
		chromedp.SetValue(chromedp.ID("pair-name"), "Test phone"),
		chromedp.Click(chromedp.ID("pair-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-question="q-yes"]`)),
		// Conversations arrive one by one and markdown is drawn in slices:
		// the page is done when its last item is whole and it is not busy.
		chromedp.WaitVisible(chromedp.CSS(`[data-item="n2"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#main[aria-busy]`)))
	pairTime := time.Since(pairStart)
	devs := st.List()
	if len(devs) != 1 || devs[0].Name != "Test phone" {
		t.Fatalf("paired devices: %+v", devs)
	}

	t.Run("X1_X6_hostile_text_drawn_as_text", func(t *testing.T) {
		type link struct {
			Href   string `json:"href"`
			Rel    string `json:"rel"`
			Target string `json:"target"`
			Text   string `json:"text"`
		}
		type shown struct {
			Images       int      `json:"images"`
			Frames       int      `json:"frames"`
			Scripts      []string `json:"scripts"`
			Markdown     string   `json:"markdown"`
			Heading      string   `json:"heading"`
			Strong       string   `json:"strong"`
			Code         string   `json:"code"`
			Bidi         string   `json:"bidi"`
			Links        []link   `json:"links"`
			Removed      []string `json:"removed"`
			Shortened    bool     `json:"shortened"`
			NotShortened bool     `json:"notShortened"`
			Rationale    string   `json:"rationale"`
			Status       string   `json:"status"`
			Choices      string   `json:"choices"`
			BeltButtons  string   `json:"beltButtons"`
		}
		got, err := chromedp.Run(ctx, chromedp.Evaluate[shown](`(() => {
			const q = (s) => document.querySelector(s);
			const md = q('[data-item="i3"]');
			return {
				images: document.querySelectorAll('img:not([src="/icon.svg"]), svg image').length,
				frames: document.querySelectorAll('iframe, object, embed, frame').length,
				scripts: Array.from(document.scripts).map((s) => s.getAttribute('src') || 'INLINE:' + s.textContent),
				markdown: md.textContent,
				heading: md.querySelector('h4').textContent,
				strong: md.querySelector('strong').textContent,
				code: md.querySelector('code').textContent,
				bidi: q('[data-item="i2"] .body').textContent,
				links: Array.from(document.querySelectorAll('a[href]')).filter((a) => !a.classList.contains('skip')).map((a) => ({href: a.getAttribute('href'), rel: a.rel, target: a.target, text: a.textContent})),
				removed: ['i7', 'i8'].map((id) => q('[data-item="' + id + '"]').textContent),
				shortened: !!q('[data-question="q-short"] .shortened'),
				notShortened: !q('[data-question="q-yes"] .shortened'),
				rationale: q('[data-question="q-yes"] .rationale').textContent,
				status: Array.from(document.querySelectorAll('.agent .status')).map((e) => e.textContent).join(' | '),
				choices: Array.from(document.querySelectorAll('[data-question="q-choice"] [data-option]')).map((e) => e.textContent).join(' | '),
				beltButtons: Array.from(document.querySelectorAll('.belt-btn')).map((e) => e.textContent).join(' | '),
			};
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if got.Images != 0 || got.Frames != 0 || len(got.Scripts) != 1 || got.Scripts[0] != "/app.js" {
			t.Errorf("X6: agent text made elements: %d images, %d frames, scripts %q", got.Images, got.Frames, got.Scripts)
		}
		for _, want := range []string{"<img src=x onerror=alert(1)>", "<script>alert(2)</script>"} {
			if !strings.Contains(got.Markdown, want) {
				t.Errorf("X6: the markdown item does not show %q as characters: %q", want, got.Markdown)
			}
		}
		if got.Heading != "Plan" || got.Strong != "build" || got.Code != "site" {
			t.Errorf("markdown: heading %q, strong %q, code %q", got.Heading, got.Strong, got.Code)
		}
		if !strings.Contains(got.Markdown, "this (link removed: not a web address)") {
			t.Errorf("X6: a javascript: link in markdown was not refused: %q", got.Markdown)
		}
		if got.Bidi != "Invoice_gnp.exe ready now" {
			t.Errorf("X2: the cleaned bidi text shows as %q", got.Bidi)
		}
		wantLinks := []link{
			{"https://example.org/docs", "noopener noreferrer", "_blank", "the docs"},
			{"https://example.org/report/42", "noopener noreferrer", "_blank", "Build report"},
			{"https://example.org/notes", "noopener noreferrer", "_blank", "https://example.org/notes"},
		}
		if !slices.Equal(got.Links, wantLinks) {
			t.Errorf("X6: links %+v, want %+v", got.Links, wantLinks)
		}
		for _, r := range got.Removed {
			if r != "A link was removed: only https:// addresses open here." {
				t.Errorf("X6: a link item that is not https shows %q", r)
			}
		}
		if !got.Shortened || !got.NotShortened {
			t.Errorf("X3: Text shortened mark: on the cleaned question %v, absent on a clean one %v", got.Shortened, got.NotShortened)
		}
		if got.Rationale != "All 212 tests pass.\nThe last deploy was yesterday." {
			t.Errorf("the rationale lost its newline: %q", got.Rationale)
		}
		if got.Status != "Reachable | Unreachable: socket-not-private: /run/user/1000/desk/backup.sock is a symlink" {
			t.Errorf("T3: agent status %q", got.Status)
		}
		if got.Choices != "Europe (Frankfurt) | United States (Virginia)" {
			t.Errorf("X3: choices %q (a blank option is dropped)", got.Choices)
		}
		if got.BeltButtons != "Run tests | Tail logs" {
			t.Errorf("D2: belt %q", got.BeltButtons)
		}
		md, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(() => {
			const md = document.querySelector('[data-item="n2"]');
			const one = (s) => { const e = md.querySelector(s); return e ? e.textContent : 'MISSING ' + s; };
			return [
				String(md.querySelectorAll(':scope > ol > li').length),
				one('ol > li > ul > li'), one('ol > li > ul > li em'),
				one('blockquote em'), one('pre > code'), String(md.querySelectorAll('b').length),
				one('strong'), one('strong > em'), md.lastChild.textContent,
				md.querySelector('a').getAttribute('href'),
			];
		})()`))
		want := []string{"2", "nested item", "item", "note", "<b>not bold</b>", "0", "strong", "both",
			"keep snake_case_name, strong and both; see https://example.org/notes", "https://example.org/notes"}
		if err != nil || !slices.Equal(md, want) {
			t.Errorf("X6: the markdown renderer drew %q, want %q (%v)", md, want, err)
		}
	})

	t.Run("D6_D9_tap_yes_answers_with_the_revision_shown", func(t *testing.T) {
		click(t, "tap Yes", `[data-question="q-yes"] [data-answer="yes"]`)
		w := back.waitForwards(t, 1)
		a, ok := w[0].req.(*wire.AnswerRequest)
		if !ok || w[0].agent != "demo" || w[0].path != wire.AnswerPath {
			t.Fatalf("forwarded %+v", w[0])
		}
		if a.Conversation != "c1" || a.Question != "q-yes" || a.Revision != 3 || !slices.Equal(a.OptionIDs, []string{wire.Yes}) || a.Always || !uuidRE.MatchString(a.RequestID) {
			t.Fatalf("the answer: %+v", a)
		}
		waitText(t, `[data-question="q-yes"] .msg.ok`, "Sent: Yes.")
		// Another device answers the choice first: the tap here is refused,
		// and the card says who answered and when (D9).
		p2, err := pairs.New()
		if err != nil {
			t.Fatal(err)
		}
		status, body := httpDo(t, "POST", srv.URL+"/api/v1/pair", "", `{"secret":"`+p2.Secret+`","name":"laptop"}`)
		var pr PairReply
		if json.Unmarshal([]byte(body), &pr); status != 200 || pr.Credential == "" {
			t.Fatalf("pair a second device: %d %s", status, body)
		}
		if status, body := httpDo(t, "POST", srv.URL+"/api/v1/agents/demo/answer", pr.Credential,
			`{"requestId":"laptop-1","conversation":"c1","question":"q-choice","revision":1,"optionIds":["eu"]}`); status != 200 {
			t.Fatalf("the laptop's answer: %d %s", status, body)
		}
		back.waitForwards(t, 2)
		click(t, "tap a choice answered elsewhere", `[data-question="q-choice"] [data-option="us"]`)
		waitText(t, `[data-question="q-choice"] .msg.error`, "this question was answered already, by laptop at ")
		back.waitForwards(t, 2)
		// A second tap on the same card sends nothing more.
		// The card is locked (its buttons aria-disabled), which is why the
		// tap sends nothing: seen before and after it, not waited out.
		locked := `[data-question="q-yes"] [data-answer="no"][aria-disabled="true"]`
		do(t, loadGuard, "the answered card locked", chromedp.WaitVisible(chromedp.CSS(locked)))
		click(t, "tap No after Yes", `[data-question="q-yes"] [data-answer="no"]`)
		do(t, loadGuard, "the answered card still locked", chromedp.WaitVisible(chromedp.CSS(locked)))
		back.waitForwards(t, 2)
	})

	t.Run("D7_always_allow_needs_the_second_tap", func(t *testing.T) {
		do(t, loadGuard, "tap Always allow",
			chromedp.Click(chromedp.CSS(`[data-question="q-always"] [data-answer="always"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-question="q-always"] .confirm`)))
		confirm := text(t, `[data-question="q-always"] .confirm`)
		shoot(t, "collie-web-confirm.png", `[data-question="q-always"]`)
		for _, want := range []string{"tap again to confirm", "Bash: git push …, for an hour", "git push", "1 hour"} {
			if !strings.Contains(confirm, want) {
				t.Errorf("D7: the confirmation does not show %q: %q", want, confirm)
			}
		}
		// Tapping Always allow again is not the confirmation.
		click(t, "tap Always allow again", `[data-question="q-always"] [data-answer="always"]`)
		// The confirm button is enabled after the page's delay: an event
		// after which the repeated tap would have sent its write.
		do(t, loadGuard, "wait for the confirm button", chromedp.WaitEnabled(chromedp.CSS(`[data-question="q-always"] [data-answer="confirm-always"]`)))
		back.waitForwards(t, 2) // still only the two answers to the other questions
		click(t, "confirm", `[data-question="q-always"] [data-answer="confirm-always"]`)
		w := back.waitForwards(t, 3)
		a, ok := w[2].req.(*wire.AnswerRequest)
		if !ok || a.Question != "q-always" || a.Revision != 2 || !a.Always || !slices.Equal(a.OptionIDs, []string{wire.Yes}) {
			t.Fatalf("D7: the confirmed answer: %+v", w[2])
		}
		waitText(t, `[data-question="q-always"] .msg.ok`, "Sent: Always allow.")
	})

	t.Run("X4_send_checks_the_size_first", func(t *testing.T) {
		ta := `[data-conv="c1"] .composer textarea`
		send := `[data-conv="c1"] .composer button[type="submit"]`
		// The composer is folded away until asked for.
		click(t, "open the conversation's tools", `[data-conv="c1"] .conv-tools > summary`)
		do(t, loadGuard, "send 32770 bytes",
			setValue(ta, strings.Repeat("é", 16385)),
			chromedp.Click(chromedp.CSS(send)))
		waitText(t, `[data-conv="c1"] > .msg`, "The message is 32770 bytes; the limit is 32768")
		do(t, loadGuard, "send an empty message", setValue(ta, ""), chromedp.Click(chromedp.CSS(send)))
		waitText(t, `[data-conv="c1"] > .msg`, "The message is empty")
		back.waitForwards(t, 3)
		do(t, loadGuard, "send a message", setValue(ta, "Ship it after lunch"), chromedp.Click(chromedp.CSS(send)))
		w := back.waitForwards(t, 4)
		if s, ok := w[3].req.(*wire.SendRequest); !ok || w[3].path != wire.SendPath || s.Conversation != "c1" || s.Text != "Ship it after lunch" || s.Steer {
			t.Fatalf("sent %+v", w[3])
		}
		waitText(t, `[data-conv="c1"] > .msg`, "Sent.")
		click(t, "tap a belt button", `.belt-btn[data-action="tests"]`)
		w = back.waitForwards(t, 5)
		if a, ok := w[4].req.(*wire.ActionRequest); !ok || w[4].path != wire.ActionPath || a.Action != "tests" {
			t.Fatalf("D2: the belt tap forwarded %+v", w[4])
		}
	})

	var updateTime time.Duration
	t.Run("live_update_within_a_second", func(t *testing.T) {
		// The agent took both answers and asks something new.
		s := agentSnapshot(t, `{"id":"q-new","kind":"yes-no","title":"Roll back the database?","rationale":"The migration failed on one replica.","revision":1,"toolCall":"tc-3"}`)
		c := &s.Spaces[0].Tabs[0].Conversations[0]
		c.Questions = slices.DeleteFunc(c.Questions, func(q wire.Question) bool { return q.ID == "q-yes" || q.ID == "q-always" })
		back.setView(browserView(s))
		start := time.Now()
		api.Changed()
		do(t, time.Second, "see the new question within a second",
			chromedp.WaitVisible(chromedp.CSS(`[data-question="q-new"]`)),
			chromedp.WaitNotPresent(chromedp.CSS(`[data-question="q-yes"]`)))
		updateTime = time.Since(start)
		// What the user typed elsewhere survives the update.
		if v, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`[data-conv="c1"] .composer textarea`))); err != nil || v != "" {
			t.Errorf("the composer after sending and an update: %q %v", v, err)
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		do(t, loadGuard, "scroll to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("the screenshot is not a PNG: %v", err)
		}
		path := filepath.Join(shots, "collie-web-main.png")
		if err := os.WriteFile(path, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != 412 || b.Dy() < 915 {
			t.Fatalf("the screenshot %s is %dx%d, want 412 wide and a page at least 915 high", path, b.Dx(), b.Dy())
		}
		t.Logf("screenshot of the main view: %s (%dx%d)", path, img.Bounds().Dx(), img.Bounds().Dy())
	})

	t.Run("X6_hostile_markdown_renders_in_bounded_time", func(t *testing.T) {
		// 32 KiB built to make a naive parser search the rest of the text
		// at every character.
		hostile := strings.Repeat("[", 6000) + strings.Repeat("*a", 3000) + strings.Repeat("`", 3000) +
			strings.Repeat("_", 3000) + strings.Repeat("<", 3000) + strings.Repeat("**", 3000) + strings.Repeat("> ", 1500)
		hostile = hostile[:min(len(hostile), 32768)]
		s := agentSnapshot(t)
		s.Spaces[0].Tabs[0].Conversations = append(s.Spaces[0].Tabs[0].Conversations, wire.Conversation{
			ID: "c4", Title: "Stress", Items: []wire.Item{{ID: "h1", Kind: wire.KindMarkdown, Text: hostile}}})
		back.setView(browserView(s))
		start := time.Now()
		api.Changed()
		do(t, 2*time.Second, "render 32 KiB of hostile markdown", chromedp.WaitVisible(chromedp.CSS(`[data-item="h1"]`)))
		took := time.Since(start)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector('[data-item="h1"]').textContent.length`))
		if err != nil || n < 20000 {
			t.Fatalf("the hostile markdown shows %d characters (%v)", n, err)
		}
		t.Logf("32 KiB of hostile markdown drawn %v after the change", took.Round(time.Millisecond))
	})

	t.Run("revoked_device_is_told_to_pair_again", func(t *testing.T) {
		start := time.Now()
		if err := api.Revoke(devs[0].ID); err != nil {
			t.Fatal(err)
		}
		do(t, loadGuard, "see the revoked message", chromedp.WaitVisible(chromedp.ID("revoked")))
		if got := text(t, "#revoked"); got != "This device was revoked; pair it again" {
			t.Fatalf("the revoked message reads %q", got)
		}
		if n := len(back.forwards()); n != 5 {
			t.Fatalf("%d writes, want 5", n)
		}
		t.Logf("revoked message after %v", time.Since(start).Round(time.Millisecond))
	})

	mu.Lock()
	defer mu.Unlock()
	if len(dialogs) > 0 {
		t.Errorf("X6: the page opened dialogs (agent text ran): %q", dialogs)
	}
	for _, m := range console {
		bad := m.IsException() || strings.Contains(m.Text, "Content Security Policy") || strings.Contains(m.Text, "Trusted Type") || m.Source == "security"
		if bad {
			t.Errorf("the page logged: %s (%s:%d)", m, m.URL, m.Line+1)
		}
	}
	t.Logf("chromium %s: started in %v, paired in %v, update shown in %v, whole test %v",
		chromium, startup.Round(time.Millisecond), pairTime.Round(time.Millisecond), updateTime.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}
