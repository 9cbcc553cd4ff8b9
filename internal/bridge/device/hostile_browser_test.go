package device

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// hostileMarkdownItem is one markdown item of at most 32 KiB (X4) built to
// cost a renderer: kind 0 a list nested as deep as markdown goes, kind 1
// one long line full of emphasis, code spans and links, kind 2 many short
// list items.
func hostileMarkdownItem(kind, n int) string {
	var b strings.Builder
	switch kind {
	case 0:
		for b.Len() < 28<<10 {
			for d := range 8 {
				fmt.Fprintf(&b, "%s- level %d of item %d with *em* and `code` and [a link](https://example.org/%d)\n", strings.Repeat("  ", d), d, n, d)
			}
		}
	case 1:
		fmt.Fprintf(&b, "# Long line %d\n\n", n)
		for b.Len() < 30<<10 {
			b.WriteString("word **strong _nested_** `span` [link](https://example.org/x) <https://example.org/y> snake_case ")
		}
	default:
		for i := 0; b.Len() < 24<<10; i++ {
			fmt.Fprintf(&b, "%d. step %d of %d: **do** it\n", i+1, i, n)
		}
	}
	return b.String()
}

// hostileSnapshot is 4 MiB of markdown in four conversations, each with
// one yes-no question.
func hostileSnapshot() *wire.Snapshot {
	s := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Flood", Tabs: []wire.Tab{{ID: "t", Title: "All"}}}}}
	tab := &s.Spaces[0].Tabs[0]
	for c := range 4 {
		conv := wire.Conversation{ID: fmt.Sprintf("c%d", c), Title: fmt.Sprintf("Flood %d", c),
			Questions: []wire.Question{{ID: fmt.Sprintf("q%d", c), Kind: wire.AskYesNo, Title: fmt.Sprintf("Go on with flood %d?", c), Revision: 1}}}
		for i := range 35 {
			conv.Items = append(conv.Items, wire.Item{ID: fmt.Sprintf("m%d-%d", c, i), Kind: wire.KindMarkdown, Text: hostileMarkdownItem(i%3, i)})
		}
		tab.Conversations = append(tab.Conversations, conv)
	}
	return s
}

// withChangedItem is s with the newest item of the first conversation changed,
// as a new snapshot (the bridge never changes one it handed out).
func withChangedItem(s *wire.Snapshot, round int) *wire.Snapshot {
	n := *s
	n.Spaces = slices.Clone(s.Spaces)
	n.Spaces[0].Tabs = slices.Clone(s.Spaces[0].Tabs)
	n.Spaces[0].Tabs[0].Conversations = slices.Clone(s.Spaces[0].Tabs[0].Conversations)
	c := &n.Spaces[0].Tabs[0].Conversations[0]
	c.Items = slices.Clone(c.Items)
	i := len(c.Items) - 1 // the newest, as a reply being written
	c.Items[i].Text = fmt.Sprintf("# Changed in round %d\n\n", round) + hostileMarkdownItem(round%3, round)[:20<<10]
	return &n
}

// tapBackend is the bridge for the hostile test: a view that changes, and
// the time each write reached it.
type tapBackend struct {
	mu   sync.Mutex
	view []view.Agent
	got  chan wire.WriteRequest
}

func (b *tapBackend) View() []view.Agent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

func (b *tapBackend) Forward(_ context.Context, agent, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	b.got <- req
	return &wire.WriteReply{RequestID: "ok"}, nil
}

func (b *tapBackend) SetWatching(bool) {}

// longTasks records the page's long tasks (over 50 ms, as Chromium
// reports them) from before its first script runs.
const longTasks = `window.__collieLong = {max: 0, count: 0, list: []};
new PerformanceObserver((l) => {
	for (const e of l.getEntries()) {
		window.__collieLong.count++;
		window.__collieLong.max = Math.max(window.__collieLong.max, e.duration);
		window.__collieLong.list.push(Math.round(e.duration));
	}
}).observe({type: 'longtask', buffered: true});`

// TestHostileSnapshotKeepsPageResponsive_X6_D6: an agent whose 4 MiB
// snapshot is full of markdown changes one item every 2 s while the page
// shows it in a real chromium. Over more than 10 s, from the first load
// on, no main-thread task of the page takes 200 ms or more, each tap on a
// question reaches the agent in under a second, and the page keeps up
// with the changes (devices get deltas; X6, D6).
func TestHostileSnapshotKeepsPageResponsive_X6_D6(t *testing.T) {
	chromium := needChromium(t)
	// The machine is shared (two cores, other tests beside this one): a
	// round whose window another process ate is measured again, and the
	// test passes when one whole round is within both budgets, as the
	// benchmarks keep each side's fastest run. A page that is slow by
	// itself is slow in every round.
	var rounds []string
	for round := 1; round <= 3; round++ {
		var long float64
		var tap time.Duration
		t.Run(fmt.Sprintf("round_%d", round), func(t *testing.T) { long, tap = hostileRound(t, chromium) })
		if t.Failed() {
			return
		}
		if long < 200 && tap < time.Second {
			return
		}
		rounds = append(rounds, fmt.Sprintf("round %d: longest task %.0f ms, slowest tap %v", round, long, tap.Round(time.Millisecond)))
	}
	t.Errorf("in no round was the longest main-thread task under 200 ms and every tap under 1 s: %s", strings.Join(rounds, "; "))
}

// hostileRound loads the page under the hostile snapshot in a new
// Chromium and returns the longest main-thread task (ms) and the slowest
// tap to reach the agent.
func hostileRound(t *testing.T, chromium string) (longMax float64, worstTap time.Duration) {
	snap := hostileSnapshot()
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 3<<20 || len(raw) > wire.SnapshotCap {
		t.Fatalf("the hostile snapshot is %d bytes; want 3 to 4 MiB", len(raw))
	}
	back := &tapBackend{got: make(chan wire.WriteRequest, 16)}
	agentView := func(s *wire.Snapshot) []view.Agent {
		return []view.Agent{{AgentStatus: view.AgentStatus{Name: "flood", Agent: "Hostile", Transport: "socket", Reachable: true}, Snapshot: s}}
	}
	back.view = agentView(snap)
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: store.NewPairings(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Site: siteOf(t, srv)})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"))
	t.Cleanup(cancelAlloc)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelTab)
	// A phone's size; not mobile emulation, whose visual viewport would
	// put a tap's coordinates elsewhere than the page's own.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(412, 915)); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: longTasks}); err != nil {
		t.Fatal(err)
	}
	// The paired device's credential, as pairing would have left it.
	if _, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{Name: CookieName, Value: cred, URL: srv.URL + "/api/", Path: "/api/", HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict}); err != nil {
		t.Fatal(err)
	}
	eval := func(what, js string) any {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, loadGuard)
		defer cancel()
		v, err := chromedp.Run(tctx, chromedp.Evaluate[any](js))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	// waitFor polls the page for js to be true, with a deadline.
	waitFor := func(what, js string, within time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, _ := eval(what, "!!("+js+")").(bool); v {
				return time.Since(start)
			}
			if time.Since(start) > within {
				t.Fatalf("%s: not within %v; the page has %v", what, within, eval("the page's state", `({drawing: document.querySelectorAll('.item.drawing').length,
					drawn: document.querySelectorAll('.item.md').length, busy: document.getElementById('main').getAttribute('aria-busy'),
					changed: Array.from(document.querySelectorAll('.item.md h4')).map((h) => h.textContent).filter((s) => s.startsWith('Changed')),
					conn: document.getElementById('conn').textContent})`))
			}
			<-tick.C
		}
	}

	began := time.Now()
	tctx, cancel := context.WithTimeout(ctx, loadGuard)
	err = chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/"))
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	firstQuestion := waitFor("the first question shows", `document.querySelector('[data-question="q0"] [data-answer="yes"]')`, 20*time.Second)

	// The agent changes one item every 2 s (the load; nothing waits on it).
	stop := make(chan struct{})
	var rounds sync.WaitGroup
	var last int
	var lastMu sync.Mutex
	changed := make(chan int, 1)
	rounds.Go(func() {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		cur := snap
		for round := 1; ; round++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			cur = withChangedItem(cur, round)
			back.mu.Lock()
			back.view = agentView(cur)
			back.mu.Unlock()
			lastMu.Lock()
			last = round
			lastMu.Unlock()
			api.Changed()
			select {
			case changed <- round:
			default:
			}
		}
	})
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		rounds.Wait()
	}()

	// Taps on each question while the changes come, paced by their own
	// ticker: each must reach the agent within a second of the tap.
	var taps, located []time.Duration
	pace := time.NewTicker(2300 * time.Millisecond)
	defer pace.Stop()
	for i := range 4 {
		<-pace.C
		q := fmt.Sprintf("q%d", i)
		found := time.Now()
		// Scroll the button into view and read where it is, then tap there
		// with real mouse events, as a finger would.
		// Drawing near it may move it: read it again after each frame
		// until it stays put.
		// Finding the button is not the tap: on a loaded machine it may
		// take many frames, so it has its own, generous deadline.
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		pos, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`(async () => {
			const b = document.querySelector('[data-question="`+q+`"] [data-answer="yes"]');
			if (!b) return null;
			b.scrollIntoView({block: 'center'});
			const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
			let last = '';
			for (let i = 0; i < 1200; i++) {
				await frame();
				const r = b.getBoundingClientRect();
				const at = [r.left + r.width / 2, r.top + r.height / 2];
				if (JSON.stringify(at) === last && document.elementFromPoint(at[0], at[1]) === b) return at;
				last = JSON.stringify(at);
			}
			return null;
		})()`, chromedp.EvalAwaitPromise))
		cancel()
		ok := err == nil && len(pos) == 2
		if !ok || len(pos) != 2 {
			// A page too busy to settle within 30 s: a round over budget.
			t.Logf("tap %d: the question %s is not on the page, or did not stay put within 30 s (%v)", i, q, err)
			return math.Inf(1), time.Hour
		}
		x, y := pos[0], pos[1]
		located = append(located, time.Since(found))
		start := time.Now()
		tctx, cancel = context.WithTimeout(ctx, loadGuard)
		err = chromedp.Do(tctx, chromedp.MouseClickXY(x, y))
		cancel()
		if err != nil {
			t.Fatalf("tap %d: %v", i, err)
		}
		select {
		case req := <-back.got:
			took := time.Since(start)
			a, ok := req.(*wire.AnswerRequest)
			if !ok || a.Question != q {
				t.Fatalf("tap %d on %s forwarded %+v", i, q, req)
			}
			taps = append(taps, took)
		case <-time.After(5 * time.Second):
			t.Logf("tap %d on %s did not reach the agent within 5 s; the page has %v", i, q, eval("the page's state", `({long: window.__collieLong, drawing: document.querySelectorAll('.item.drawing').length,
				card: document.querySelector('[data-question="`+q+`"]').outerHTML.slice(0, 600), at: document.elementFromPoint(`+fmt.Sprint(x)+`, `+fmt.Sprint(y)+`).outerHTML.slice(0, 200)})`))
			return math.Inf(1), time.Hour
		}
	}
	// The load goes on for at least five changes (10 s) in all.
	for r := range changed {
		if r >= 5 {
			break
		}
	}
	close(stop)
	rounds.Wait()
	lastMu.Lock()
	final := last
	lastMu.Unlock()
	// The page keeps up: the last change is drawn.
	caughtUp := waitFor("the last change drawn", fmt.Sprintf(`Array.from(document.querySelectorAll('[data-conv="c0"] .item.md h4')).some((h) => h.textContent === 'Changed in round %d')`, final), 10*time.Second)
	window := time.Since(began)

	var long struct {
		Max   float64 `json:"max"`
		Count int     `json:"count"`
		List  []int   `json:"list"`
	}
	b, _ := json.Marshal(eval("read the long tasks", `window.__collieLong`))
	if err := json.Unmarshal(b, &long); err != nil {
		t.Fatalf("long tasks: %v (%s)", err, b)
	}
	var worst time.Duration
	if len(taps) > 0 {
		worst = slices.Max(taps)
	}
	t.Logf("hostile snapshot: %d bytes of JSON, %d markdown items; first question shown %v after the load began; %d changes, one every 2 s, over %v",
		len(raw), 4*35, firstQuestion.Round(time.Millisecond), final, window.Round(time.Millisecond))
	t.Logf("longest main-thread task: %.0f ms (%d long tasks over 50 ms: %v); taps reached the agent in %v (worst %v), each after %v scrolling to its button and waiting for it to stay put; last change drawn %v after the last tap",
		long.Max, long.Count, long.List, taps, worst.Round(time.Millisecond), located, caughtUp.Round(time.Millisecond))
	if window < 10*time.Second {
		t.Errorf("measured over %v, want at least 10 s", window)
	}
	return long.Max, worst
}
