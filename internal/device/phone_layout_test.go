package device

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/wire"
)

// TestPhoneLayout_390x844: the page at a phone's 390×844, as the trial of
// issue 13 saw it: nothing wider than the screen (tool output scrolls
// inside its box, never clipped), a conversation's composer and actions
// folded away until asked for, the agent's name not repeated down the
// screen, "This device" outside the waiting banner, and a tap's "Sent"
// still readable after the agent took the question away. Screenshots go
// to COLLIE_WEB_SCREENSHOT_DIR, or a temporary folder the log names.
func TestPhoneLayout_390x844(t *testing.T) {
	chromium := needChromium(t)
	s := agentSnapshot(t)
	// A tool whose output has a line far wider than a phone.
	c := &s.Spaces[0].Tabs[0].Conversations[0]
	c.Items = append(c.Items, wire.Item{ID: "i9", Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "Bash", Status: "done", Summary: "ls -l",
		Output: "-rw-r--r-- 1 me me 4096 Dec  2 10:00 " + strings.Repeat("a-very-long-file-name-", 12) + ".txt\nEND-OF-OUTPUT\n"}})
	back := &browserBackend{view: browserView(s)}
	store, err := OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pairs := NewPairings(nil)
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: store, Pairings: pairs, Site: siteOf(t, srv), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	t.Cleanup(api.Close)
	b := newTab(t, chromium, "")
	p, err := pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	b.do("pair",
		chromedp.Navigate(srv.URL+"/#pair="+p.Secret),
		chromedp.WaitVisible(chromedp.ID("pair-code")),
		chromedp.SetValue(chromedp.ID("pair-name"), "Test phone"),
		chromedp.Click(chromedp.ID("pair-submit")),
		chromedp.WaitVisible(chromedp.CSS(`[data-item="n2"]`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#main[aria-busy]`)))
	b.shoot("collie-phone-top.png")

	t.Run("nothing_wider_than_the_screen", func(t *testing.T) {
		b.t = t
		b.do("open the long tool output", chromedp.Evaluate[chromedp.Void](`(() => { const d = document.querySelector('[data-item="i9"]'); d.open = true; d.scrollIntoView({block: 'start'}); })()`))
		var got struct {
			Page, View     float64
			Right, Clipped bool
			OutputEnd      bool
		}
		b.eval(`(() => {
			const pre = document.querySelector('[data-item="i9"] pre');
			const r = pre.getBoundingClientRect();
			const end = document.createRange();
			end.selectNodeContents(pre);
			const last = Array.from(end.getClientRects()).pop();
			return {page: document.documentElement.scrollWidth, view: window.innerWidth,
				right: r.right <= window.innerWidth, clipped: pre.scrollWidth > pre.clientWidth,
				outputEnd: !!last && last.right <= window.innerWidth};
		})()`, &got)
		if got.Page > got.View || !got.Right || got.Clipped || !got.OutputEnd {
			t.Fatalf("at %v px: page %v px wide, the output inside the screen %v, cut sideways %v, its end on screen %v", got.View, got.Page, got.Right, got.Clipped, got.OutputEnd)
		}
		b.shoot("collie-phone-tool-output.png")
	})

	t.Run("composer_and_actions_folded", func(t *testing.T) {
		b.t = t
		var h []float64
		b.eval(`Array.from(document.querySelectorAll('.conv')).map((c) => { const d = c.querySelector('.conv-tools'); return d && !d.open ? d.getBoundingClientRect().height : 9999; })`, &h)
		for i, v := range h {
			if v > 60 {
				t.Errorf("conversation %d: its composer and actions take %v px, want one folded line", i, v)
			}
		}
		b.do("unfold", chromedp.Click(chromedp.CSS(`[data-conv="c2"] .conv-tools > summary`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-conv="c2"] .composer textarea`)))
		b.shoot("collie-phone-tools-open.png")
	})

	t.Run("agent_named_once_device_apart", func(t *testing.T) {
		b.t = t
		var got struct {
			Banner     string
			InBanner   bool
			DeviceFoot string
		}
		b.eval(`(() => { const s = document.getElementById('summary'); const d = document.getElementById('device-name');
			return {banner: s.innerText, inBanner: !!s.querySelector('#device-name') || s.innerText.includes('This device'), deviceFoot: d ? d.innerText : ''}; })()`, &got)
		if n := strings.Count(got.Banner, "Site deployer"); n != 1 {
			t.Errorf("the waiting banner names the agent %d times: %q", n, got.Banner)
		}
		if got.InBanner || got.DeviceFoot != "This device: Test phone" {
			t.Errorf("the device's name: in the banner %v, at the foot %q", got.InBanner, got.DeviceFoot)
		}
	})

	t.Run("sent_stays_readable", func(t *testing.T) {
		b.t = t
		b.do("tap Yes", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-question="q-yes"]').scrollIntoView({block: 'center'})`),
			chromedp.Click(chromedp.CSS(`[data-question="q-yes"] [data-answer="yes"]`)))
		back.waitForwards(t, 1)
		// The agent takes the question away at once, as agents do.
		s2 := agentSnapshot(t)
		c2 := &s2.Spaces[0].Tabs[0].Conversations[0]
		c2.Questions = c2.Questions[1:]
		back.setView(browserView(s2))
		api.Changed()
		b.until("the card gone", `!document.querySelector('[data-question="q-yes"]')`)
		var msg string
		b.eval(`document.querySelector('[data-conv="c1"] > .msg').innerText`, &msg)
		if msg != "Sent: Yes to “Deploy to production?”." {
			t.Fatalf("after the card went, the conversation says %q", msg)
		}
		b.shoot("collie-phone-sent.png")
	})
}
