package device

import (
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestPhoneLayout_390x844: the page at a phone's 390×844, as the trial of
// a phone shows it: nothing wider than the screen (tool output scrolls
// inside its box, never clipped), a conversation's composer and actions
// folded away until asked for, the agent's name not repeated down the
// screen, "This device" outside the waiting banner, and a tap's "Sent"
// still readable after the agent took the question away. Screenshots go
// to COLLIE_WEB_SCREENSHOT_DIR, or a temporary folder the log names.
func TestPhoneLayout_390x844(t *testing.T) {
	chromium := needChromium(t)
	s := agentSnapshot(t, longQuestions(t)...)
	// A tool whose output has a line far wider than a phone.
	c := &s.Spaces[0].Tabs[0].Conversations[0]
	c.Items = append(c.Items, wire.Item{ID: "i9", Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "Bash", Status: "done", Summary: "ls -l",
		Output: "-rw-r--r-- 1 me me 4096 Dec  2 10:00 " + strings.Repeat("a-very-long-file-name-", 12) + ".txt\nEND-OF-OUTPUT\n"}})
	back := &browserBackend{view: browserView(s)}
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

	t.Run("X3_answers_under_the_title", func(t *testing.T) {
		b.t = t
		for _, id := range []string{"q-why", "q-cmd"} {
			var got struct {
				Title, Yes, Column, View float64
				Tail, Folded             bool
			}
			b.eval(`(() => {
				const q = document.querySelector('[data-question="`+id+`"]');
				const h = q.querySelector('h4');
				h.scrollIntoView({block: 'start'});
				window.scrollBy(0, -64); // out from under the page's header
				const top = h.getBoundingClientRect().top;
				const r = q.querySelector('.rationale');
				const tail = r.querySelector('.fold-tail');
				return {title: h.getBoundingClientRect().bottom - top, yes: q.querySelector('[data-answer="yes"]').getBoundingClientRect().bottom - top,
					column: r.clientWidth, view: window.innerWidth, folded: !!r.querySelector('details.fold:not([open])'),
					tail: !!tail && tail.innerText.includes('echo hidden-tail >> MARK') || !tail && false};
			})()`, &got)
			if !got.Folded || got.Yes > 420 {
				t.Errorf("%s: folded %v; Yes ends %v px under the title's top, want it on the first screen, within 420 px", id, got.Folded, got.Yes)
			}
			if got.Column < 330 {
				t.Errorf("%s: the text column is %v of %v px; the nested boxes take the rest", id, got.Column, got.View)
			}
			if id == "q-cmd" && !got.Tail {
				t.Errorf("%s: the command's last line is not in view on the folded card", id)
			}
			b.shoot("collie-phone-" + id + ".png")
		}
		// The rest is one tap away.
		b.do("unfold", chromedp.Click(chromedp.CSS(`[data-question="q-why"] details.fold > summary`)))
		b.until("the middle shown", `document.querySelector('[data-question="q-why"] details.fold').open && document.querySelector('[data-question="q-why"] .fold-middle').getBoundingClientRect().height > 0`)
		b.shoot("collie-phone-q-why-open.png")
		// The whole command, as a yes would run it, is a tap away too.
		b.do("show the whole command", chromedp.Click(chromedp.CSS(`[data-question="q-cmd"] details.whole > summary`)))
		var whole struct {
			Length int
			Tail   bool
		}
		b.eval(`(() => { const p = document.querySelector('[data-question="q-cmd"] details.whole[open] pre'); const s = p ? p.innerText : '';
			return {length: s.length, tail: s.trimEnd().endsWith('echo hidden-tail >> MARK')}; })()`, &whole)
		if whole.Length < 100000 || !whole.Tail {
			t.Errorf("the whole command: %d characters shown, its last line there %v", whole.Length, whole.Tail)
		}
		b.shoot("collie-phone-q-cmd-whole.png")
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

// longQuestions are two cards that used to push their answers screens
// down: a 1.4 KB rationale, and the hook's card of a 100 KB command whose
// last line is what a yes runs last.
func longQuestions(t *testing.T) []string {
	t.Helper()
	why := strings.Repeat("The migration rewrites every row of the orders table and takes the site read-only while it runs. ", 14)
	cmd := strings.Repeat("echo filler-line\n", 6000) + "echo hidden-tail >> MARK"
	in, _ := json.Marshal(map[string]string{"command": cmd, "description": "Run the data migration"})
	hook := hook.QuestionFor(hook.PreToolUse{ToolName: "Bash", ToolInput: in, ToolUseID: "toolu_big", Cwd: "/home/u/app"})
	var out []string
	for _, q := range []wire.Question{
		{ID: "q-why", Kind: wire.AskYesNo, Title: "Migrate the orders table?", Rationale: why, Revision: 1},
		{ID: "q-cmd", Kind: wire.AskYesNo, Title: hook.Title, Rationale: hook.Rationale, Revision: 1, ToolCall: hook.ToolCall, Shortened: hook.Shortened, Detail: hook.Detail},
	} {
		b, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
