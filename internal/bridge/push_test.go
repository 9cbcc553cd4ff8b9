package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/dispatch"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// The end-to-end test of the push guard (D9) runs the daemon's
// own parts in a testing/synctest bubble, so that an hour is an hour of
// the bubble's clock and every count is exact: a real durable agent
// (durable.Server, its waiting reads) on memnet's in-memory connections,
// the bridge's scheduler and its one apply path, the dispatcher with the
// guard writing its real file, a recording provider, and the device API's
// handler reading the bridge. What is left out is the control socket and
// the device API's TCP listener, whose real sockets a bubble cannot wait
// on; they carry nothing of the guard. No clock or hook is added to the
// shipped daemon for it: the bubble's clock is the time package itself.

// pushRecorder is a push provider that records what it is given, and when.
type pushRecorder struct {
	mu   sync.Mutex
	msgs []push.Message
	at   []time.Time
}

func (r *pushRecorder) Name() string { return "recorder" }

func (r *pushRecorder) Send(_ context.Context, m push.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs, r.at = append(r.msgs, m), append(r.at, time.Now())
	return nil
}

func (r *pushRecorder) sent() ([]push.Message, []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]push.Message(nil), r.msgs...), append([]time.Time(nil), r.at...)
}

// asking is a durable agent's state that grows by one question at a time.
type asking struct {
	m     *memAgent
	convs map[string]*wire.Conversation
	order []string
	n     int
}

// ask adds a question in conversation conv (made when new) and shows the
// agent's new state.
func (a *asking) ask(t *testing.T, conv string, count int) {
	t.Helper()
	for range count {
		c, ok := a.convs[conv]
		if !ok {
			c = &wire.Conversation{ID: conv, Title: "Conversation " + conv}
			a.convs[conv] = c
			a.order = append(a.order, conv)
		}
		c.Questions = append(c.Questions, wire.Question{ID: fmt.Sprint("q", a.n), Kind: wire.AskYesNo, Title: fmt.Sprintf("Run step %d?", a.n), Revision: 1, ToolCall: fmt.Sprint("call-", a.n)})
		a.n++
	}
	tab := wire.Tab{ID: "t", Title: "Tab"}
	for _, id := range a.order {
		tab.Conversations = append(tab.Conversations, *a.convs[id])
	}
	if err := a.m.srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Space", Tabs: []wire.Tab{tab}}}}); err != nil {
		t.Fatal(err)
	}
}

// deviceQuestions counts the questions a paired device reads from the
// device API (GET /api/v1/state), by tool call.
func deviceQuestions(t *testing.T, api *device.API, cred string) map[string]bool {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8780/api/v1/state", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/state: %d %s", rec.Code, rec.Body)
	}
	var st device.State
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, ag := range st.Agents {
		if ag.Snapshot == nil {
			continue
		}
		for _, sp := range ag.Snapshot.Spaces {
			for _, tb := range sp.Tabs {
				for _, c := range tb.Conversations {
					for _, q := range c.Questions {
						out[q.ToolCall] = true
					}
				}
			}
		}
	}
	return out
}

// TestThousandQuestionsInAMinute_D9: an agent asks 1,000 questions in a
// minute (50 ms apart, across 50 conversations) of a running bridge. The
// first 10 are pushed (10 a minute per host) and the other 990 held back,
// never pushed later; the agent goes on asking 10 more in each of the next
// two minutes (pushed: 30 in the hour), then one more, which becomes the
// one summary push ("991 more questions are waiting"); then nothing is
// pushed for an hour while it asks a question a minute; the first question
// after the hour is pushed. Every one of the 1,081 cards is on the device
// API, pushed or not, and each question was decided once although
// collie durable list's checks read the agent beside its held reads.
func TestThousandQuestionsInAMinute_D9(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		m := startMemAgent(t, agentOptions{})
		g, err := guard.Open(guard.Options{Path: filepath.Join(dir, guard.FileName)})
		if err != nil {
			t.Fatal(err)
		}
		rec := &pushRecorder{}
		d := dispatch.New(dispatch.Options{Guard: g, Providers: []push.Provider{rec}, Log: quiet(), URL: func() string { return "http://127.0.0.1:8780/" }})
		b := New(Options{Log: quiet(), Push: d})
		devs, err := store.OpenStore(filepath.Join(dir, "devices.json"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, cred, err := devs.Add("phone")
		if err != nil {
			t.Fatal(err)
		}
		api := device.NewAPI(device.Options{Backend: b, Store: devs, Pairings: store.NewPairings(nil), Log: quiet(), Site: policy.NewSite("http", "127.0.0.1", "8780")})
		b.api = api
		ctx, cancel := context.WithCancel(t.Context())
		b.ctx = ctx
		d.Start(ctx)
		b.mu.Lock()
		b.add(sources.Source{Name: "agent", Socket: ""}, m.client(), nil)
		b.mu.Unlock()
		defer func() {
			cancel()
			b.stopAll()
			d.Wait()
			api.Close()
			m.hs.Close()
			synctest.Wait()
		}()
		start := time.Now()
		at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
		a := &asking{m: m, convs: map[string]*wire.Conversation{}}

		// 1,000 questions in a minute; reads beside the held ones now and
		// then, as collie durable list makes.
		for i := range 1000 {
			a.ask(t, fmt.Sprintf("c%02d", i%50), 1)
			if i%100 == 50 {
				go b.Check(ctx)
			}
			time.Sleep(50 * time.Millisecond)
		}
		at(55 * time.Second)
		synctest.Wait()
		msgs, _ := rec.sent()
		if len(msgs) != 10 {
			t.Fatalf("%d pushes in the first minute, want 10", len(msgs))
		}
		if st := g.Status(); st.Held != 990 || st.HoldingBack != guard.ReasonHostMinute {
			t.Fatalf("after the first minute: %+v, want 990 held back and the host's minute full", st)
		}
		// The next two minutes: 10 new questions each, all pushed.
		at(61 * time.Second)
		for i := range 10 {
			a.ask(t, fmt.Sprint("d", i), 1)
		}
		at(122 * time.Second)
		for i := range 10 {
			a.ask(t, fmt.Sprint("e", i), 1)
		}
		// The 31st in the hour: the summary.
		at(183 * time.Second)
		a.ask(t, "f0", 1)
		synctest.Wait()
		msgs, times := rec.sent()
		if len(msgs) != 31 {
			t.Fatalf("%d pushes after three minutes and one more question, want 30 and the summary", len(msgs))
		}
		for i, m := range msgs[:30] {
			if m.Kind != push.KindQuestion || !strings.HasPrefix(m.Title, "mem: ") || strings.Contains(m.Body, "Run step") {
				t.Fatalf("push %d: %+v", i, m)
			}
		}
		sum := msgs[30]
		if sum.Kind != push.KindSummary || sum.Title != "Collie: 991 more questions are waiting" {
			t.Fatalf("the 31st push: %+v, want the summary of 991", sum)
		}
		summaryAt := times[30]
		// The silent hour: a question a minute, none pushed.
		for k := 1; k < 60; k++ {
			at(183*time.Second + time.Duration(k)*time.Minute)
			a.ask(t, fmt.Sprint("g", k), 1)
		}
		at(183*time.Second + time.Hour - time.Millisecond)
		synctest.Wait()
		if msgs, _ := rec.sent(); len(msgs) != 31 {
			t.Fatalf("%d pushes in the silent hour after the summary, want none", len(msgs)-31)
		}
		if st := g.Status(); st.HoldingBack != guard.ReasonSilent {
			t.Fatalf("in the silent hour: %+v", st)
		}
		// After the hour, pushes go out again.
		at(183*time.Second + time.Hour + time.Second)
		a.ask(t, "h0", 1)
		synctest.Wait()
		msgs, times = rec.sent()
		if len(msgs) != 32 || msgs[31].Kind != push.KindQuestion || times[31].Sub(summaryAt) < time.Hour {
			t.Fatalf("after the silent hour: %d pushes, the last %+v at %v after the summary", len(msgs), msgs[len(msgs)-1], times[len(times)-1].Sub(summaryAt))
		}

		// Every card is on the device API, pushed or not; every question
		// was decided once.
		cards := deviceQuestions(t, api, cred)
		if len(cards) != a.n || a.n != 1081 {
			t.Fatalf("%d cards on the device API, %d questions asked; want 1,081 of each", len(cards), a.n)
		}
		for i := range a.n {
			if !cards[fmt.Sprint("call-", i)] {
				t.Fatalf("question %d has no card", i)
			}
		}
		st := g.Status()
		if st.Sent != 31 || st.Summaries != 1 || int(st.Sent+st.Held+st.Summaries) != a.n {
			t.Fatalf("the guard's counts %+v: want 31 pushed, 1 summary and every other question held back, each once", st.Counters)
		}
		t.Logf("%d questions: %d pushed, %d held back, %d summary; %d cards on the device API", a.n, st.Sent, st.Held, st.Summaries, len(cards))
	})
}
