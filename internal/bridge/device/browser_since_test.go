package device

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The web page reads a streaming conversation in deltas (devices get
// deltas): in a real chromium, over seeded random changes to a large
// transcript (new items, a growing tool output, removals, moves,
// questions, titles, agent text that looks like markup), the page shows
// what a whole read gives, drawn as text, and every read of a
// conversation after its first is a delta of at most 16 KiB.

// pageRead is one conversation read the page made, as the server wrote it.
type pageRead struct {
	conv  string
	etag  string
	delta bool // answered with a delta (Collie-Delta)
	bytes int  // status line, headers and body
}

// readLog counts what the server writes for the page's conversation reads
// (requests with the cookie; the test's own reads carry a bearer token).
type readLog struct {
	mu    sync.Mutex
	reads []pageRead
}

func (l *readLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, id, ok := strings.Cut(r.URL.Path, "/conversations/")
		if !ok || r.Header.Get("Authorization") != "" {
			h.ServeHTTP(w, r)
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.reads = append(l.reads, pageRead{conv: id, etag: w.Header().Get("ETag"), delta: w.Header().Get(wire.DeltaHeader) != "", bytes: cw.n})
	})
}

// last is the ETag of the page's last read of conv.
func (l *readLog) last(conv string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.reads) - 1; i >= 0; i-- {
		if l.reads[i].conv == conv {
			return l.reads[i].etag
		}
	}
	return ""
}

type countingWriter struct {
	http.ResponseWriter
	n     int
	wrote bool
}

func (c *countingWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		c.n += len(fmt.Sprintf("HTTP/1.1 %d %s\r\n\r\n", code, http.StatusText(code)))
		for k, vs := range c.Header() {
			for _, v := range vs {
				c.n += len(k) + len(v) + 4
			}
		}
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *countingWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	c.n += len(b)
	return c.ResponseWriter.Write(b)
}

// shownItems is what the page shows of a conversation: its title, the
// items drawn (id and text) with the count of earlier ones not drawn, and
// its questions' ids.
const shownItems = `((conv) => {
	const a = Array.from(document.querySelectorAll('article.conv')).find((e) => e.dataset.conv === conv);
	if (!a || a.querySelector('.item.drawing')) return null;
	const more = a.querySelector('.earlier');
	const items = Array.from(a.querySelectorAll('.items [data-item]')).map((e) => {
		const t = e.querySelector('.body, .tool-output');
		return { id: e.dataset.item, text: t ? t.textContent : '' };
	});
	return { title: a.querySelector('h3').textContent, closed: !!a.querySelector('.badge.closed'),
		earlier: more ? parseInt(more.textContent.replace(/\D+/g, ''), 10) : 0, items,
		questions: Array.from(a.querySelectorAll('[data-question]')).map((e) => e.dataset.question),
		markup: a.querySelectorAll('.items img, .items b, .items script').length };
})`

type shownConv struct {
	Title     string `json:"title"`
	Closed    bool   `json:"closed"`
	Earlier   int    `json:"earlier"`
	Items     []struct{ ID, Text string }
	Questions []string `json:"questions"`
	Markup    int      `json:"markup"`
}

// matches reports whether the page's view s is conversation c, read whole.
func (s *shownConv) matches(c *wire.Conversation) string {
	title := c.Title
	if title == "" {
		title = c.ID
	}
	if s.Title != title || s.Closed != c.Closed || s.Markup != 0 {
		return fmt.Sprintf("title %q closed %v (markup elements %d); want %q closed %v", s.Title, s.Closed, s.Markup, title, c.Closed)
	}
	if s.Earlier+len(s.Items) != len(c.Items) || len(s.Items) == 0 {
		return fmt.Sprintf("%d items drawn and %d earlier; the conversation has %d", len(s.Items), s.Earlier, len(c.Items))
	}
	for i, got := range s.Items {
		it := c.Items[s.Earlier+i]
		want := it.Text
		if it.Tool != nil {
			want = it.Tool.Output
		}
		if got.ID != it.ID || got.Text != want {
			return fmt.Sprintf("item %d is %q %q; want %q %q", s.Earlier+i, got.ID, got.Text, it.ID, want)
		}
	}
	var qs []string
	for _, q := range c.Questions {
		qs = append(qs, q.ID)
	}
	if strings.Join(s.Questions, ",") != strings.Join(qs, ",") {
		return fmt.Sprintf("questions %q; want %q", s.Questions, qs)
	}
	return ""
}

func TestPageReadsDeltas_K8(t *testing.T) {
	chromium := needChromium(t)
	g := &streamGen{r: rand.New(rand.NewPCG(23, 1))}
	g.start(2400) // c1: about half a MiB of transcript
	back := &browserBackend{view: g.view()}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	log := &readLog{}
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: back, Store: st, Pairings: store.NewPairings(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Site: siteOf(t, srv)})
	srv.Config.Handler = log.wrap(api.Handler())
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)

	b := newTab(t, chromium, "")
	if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{Name: CookieName, Value: cred, URL: srv.URL + "/api/", Path: "/api/", HTTPOnly: new(true), SameSite: network.CookieSameSiteStrict}); err != nil {
		t.Fatal(err)
	}
	b.do("open the page", chromedp.Navigate(srv.URL+"/"))

	// whole reads a conversation whole, as a device that holds nothing.
	whole := func(id string) (wire.Conversation, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/agents/demo/conversations/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+cred)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var cr ConversationReply
		if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil || cr.Conversation == nil {
			t.Fatalf("read %s whole: %d %v", id, resp.StatusCode, err)
		}
		return *cr.Conversation, resp.Header.Get("ETag")
	}
	// caughtUp waits until the page read each conversation as it is now,
	// and, when check, until it shows what a whole read gives.
	caughtUp := func(step int, check bool) {
		t.Helper()
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for _, id := range []string{"c1", "c2"} {
			c, etag := whole(id)
			deadline := time.Now().Add(loadGuard)
			for ; log.last(id) != etag; <-tick.C {
				if time.Now().After(deadline) {
					t.Fatalf("step %d: the page never read %s at %s (its last read: %s)", step, id, etag, log.last(id))
				}
			}
			for why := "not drawn"; check && why != ""; <-tick.C {
				var s *shownConv
				b.eval(shownItems+`(`+fmt.Sprintf("%q", id)+`)`, &s)
				if why = "not drawn"; s != nil {
					why = s.matches(&c)
				}
				if why != "" && time.Now().After(deadline) {
					t.Fatalf("step %d: the page shows %s unlike a whole read: %s", step, id, why)
				}
			}
		}
	}
	caughtUp(0, true)

	const steps = 60
	for step := 1; step <= steps; step++ {
		if step == steps/2 {
			// Agent text that looks like markup, as a delta brings it.
			ns, _, err := g.st.Apply(&wire.Delta{Conversations: []wire.ConversationDelta{{ID: "c1", Items: []wire.Item{
				{ID: "x1", Kind: wire.KindText, Role: "agent", Text: `<img src=x onerror=alert(1)> <b>not bold</b> <script>alert(2)</script>`}}}}})
			if err != nil {
				t.Fatal(err)
			}
			g.st = ns
		} else {
			g.change(t, step%10 == 0) // now and then a whole read of the agent
		}
		back.setView(g.view())
		api.Changed()
		caughtUp(step, step%5 == 0 || step == steps/2)
	}

	log.mu.Lock()
	defer log.mu.Unlock()
	first := map[string]int{}
	var after, deltas, most, total int
	for _, r := range log.reads {
		if _, seen := first[r.conv]; !seen {
			first[r.conv] = r.bytes
			continue
		}
		after++
		total += r.bytes
		most = max(most, r.bytes)
		if r.delta {
			deltas++
		}
		if r.bytes > 16<<10 {
			t.Errorf("a read of %s after its first was %d bytes (delta: %v); want at most 16 KiB", r.conv, r.bytes, r.delta)
		}
	}
	t.Logf("first reads %v bytes; %d reads after them, %d of them deltas: %d bytes in all, %.0f on average, %d at most",
		first, after, deltas, total, float64(total)/float64(max(after, 1)), most)
	if first["c1"] < 256<<10 || after < steps/2 || deltas < after*3/4 {
		t.Errorf("first read of c1 %d bytes; %d reads after, %d of them deltas: the page did not read in deltas", first["c1"], after, deltas)
	}
}
