package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// fake is a provider that records what it is given and fails as told.
type fake struct {
	name string
	// fail returns the error of try n (1-based) of a message; nil: none.
	fail  func(n int) error
	block chan struct{} // when set, Send waits on it (or ctx)
	// before, when set, runs at each Send (checks made as the push leaves).
	before func()

	mu    sync.Mutex
	tries map[string]int
	got   []push.Message
	at    []time.Time
}

func (f *fake) Name() string { return f.name }

func (f *fake) Send(ctx context.Context, m push.Message) error {
	if f.before != nil {
		f.before()
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	f.tries[m.Title]++
	f.at = append(f.at, time.Now())
	if f.fail != nil {
		if err := f.fail(f.tries[m.Title]); err != nil {
			return err
		}
	}
	f.got = append(f.got, m)
	return nil
}

func (f *fake) messages() []push.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]push.Message(nil), f.got...)
}

// logs records log lines.
type logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r)
	l.mu.Unlock()
	return nil
}
func (l *logs) WithAttrs(as []slog.Attr) slog.Handler { return &withAttrs{l, as} }
func (l *logs) WithGroup(string) slog.Handler         { return l }

// withAttrs is logs with the attributes of a Logger.With.
type withAttrs struct {
	l  *logs
	as []slog.Attr
}

func (w *withAttrs) Enabled(context.Context, slog.Level) bool { return true }
func (w *withAttrs) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(w.as...)
	return w.l.Handle(ctx, r)
}
func (w *withAttrs) WithAttrs(as []slog.Attr) slog.Handler {
	return &withAttrs{w.l, append(append([]slog.Attr(nil), w.as...), as...)}
}
func (w *withAttrs) WithGroup(string) slog.Handler { return w }

func (l *logs) count(level slog.Level, msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.HasPrefix(r.Message, msg) {
			n++
		}
	}
	return n
}

// held counts the info lines msg (MsgHeld, MsgTestHeld) whose reason
// starts with reason.
func (l *logs) held(msg, reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level != slog.LevelInfo || r.Message != msg {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "reason" && strings.HasPrefix(a.Value.String(), reason) {
				n++
			}
			return true
		})
	}
	return n
}

func q(agent, conv string, i int) Question {
	return Question{Agent: agent, AgentTitle: "Deploy bot", Conversation: conv, ConversationTitle: "Release " + conv, ID: fmt.Sprint("q", i), Title: fmt.Sprintf("Ship build %d to prod?", i)}
}

func start(t testing.TB, o Options) (*Dispatcher, *logs, context.CancelFunc) {
	t.Helper()
	l := &logs{}
	if o.Guard == nil {
		g, err := guard.Open(guard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		o.Guard = g
	}
	o.Log = slog.New(l)
	d := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	d.Start(ctx)
	return d, l, func() { cancel(); d.Wait() }
}

// TestRetries: a failing provider is tried up to Attempts times, waiting
// 2, 4 and 8 s; a permanent failure is tried once; a Retry-After is waited
// out; one over MaxWait is not.
func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fail     func(n int) error
		attempts int
		gaps     []time.Duration
		ok       bool
	}{
		{"backoff_then_give_up", func(int) error { return errors.New("ntfy at https://ntfy.sh answered 502 Bad Gateway") }, 4, []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second}, false},
		{"works_at_the_third", func(n int) error {
			if n < 3 {
				return errors.New("down")
			}
			return nil
		}, 3, []time.Duration{2 * time.Second, 4 * time.Second}, true},
		{"permanent", func(int) error { return push.Permanent(errors.New("401")) }, 1, nil, false},
		{"retry_after", func(n int) error {
			if n == 1 {
				return &push.RetryAfterError{After: 30 * time.Second, Err: errors.New("429")}
			}
			return nil
		}, 2, []time.Duration{30 * time.Second}, true},
		{"retry_after_too_long", func(int) error { return &push.RetryAfterError{After: time.Hour, Err: errors.New("429")} }, 1, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fake{name: "ntfy", fail: tc.fail}
				d, _, stop := start(t, Options{Providers: []push.Provider{f}})
				defer stop()
				if dec := d.Question(q("a", "c", 1)); dec.Outcome != guard.Push {
					t.Fatalf("decision %+v", dec)
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				if len(f.at) != tc.attempts {
					t.Fatalf("%d tries, want %d", len(f.at), tc.attempts)
				}
				for i, want := range tc.gaps {
					if got := f.at[i+1].Sub(f.at[i]); got != want {
						t.Errorf("gap %d: %v, want %v", i, got, want)
					}
				}
				r := d.Last()["ntfy"]
				if r.OK != tc.ok || r.Attempts != tc.attempts || r.Kind != "question" {
					t.Errorf("last result %+v", r)
				}
			})
		})
	}
}

// TestFailureLoggedOnce: a provider that keeps failing is one warning,
// not one per try or per push; working again is one info line.
func TestFailureLoggedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broken := true
		var mu sync.Mutex
		f := &fake{name: "ntfy", fail: func(int) error {
			mu.Lock()
			defer mu.Unlock()
			if broken {
				return errors.New("ntfy at https://ntfy.sh cannot be reached")
			}
			return nil
		}}
		d, l, stop := start(t, Options{Providers: []push.Provider{f}})
		defer stop()
		for i := range 3 {
			d.Question(q("a", fmt.Sprint("c", i), i))
			time.Sleep(time.Minute)
			synctest.Wait()
		}
		if n := l.count(slog.LevelWarn, "push provider failed"); n != 1 {
			t.Fatalf("%d warnings for 3 pushes of 4 tries each, want 1", n)
		}
		mu.Lock()
		broken = false
		mu.Unlock()
		d.Question(q("a", "c9", 9))
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := l.count(slog.LevelInfo, "push provider works again"); n != 1 {
			t.Fatalf("%d lines saying it works again", n)
		}
	})
}

// TestNeverBlocks: a provider that never answers holds up neither the
// caller (the bridge's read) nor another provider; when its queue is full,
// its own oldest pushes are dropped, with one warning for them all.
func TestNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &fake{name: "desktop", block: make(chan struct{})}
		fine := &fake{name: "ntfy"}
		now := time.Now()
		g, _ := guard.Open(guard.Options{Now: func() time.Time { return now }})
		d, l, stop := start(t, Options{Guard: g, Providers: []push.Provider{stuck, fine}})
		defer stop()
		const n = LaneQueue + 20
		start := time.Now()
		for i := range n {
			now = now.Add(10 * time.Minute) // every question may go out
			d.Question(q("a", fmt.Sprint("c", i), i))
			synctest.Wait()
		}
		if time.Since(start) != 0 {
			t.Fatalf("Question took %v of the fake clock", time.Since(start))
		}
		if got := len(fine.messages()); got != n {
			t.Fatalf("the working provider got %d of %d pushes", got, n)
		}
		if n := l.count(slog.LevelWarn, "a push destination is not keeping up"); n != 1 {
			t.Fatalf("%d warnings for the pushes dropped at the stuck provider, want 1", n)
		}
		close(stuck.block)
	})
}

// TestSavedBeforeSent_D9: when a provider gets a push, the guard's file
// already counts it, so a crash as it leaves cannot forget it.
func TestSavedBeforeSent_D9(t *testing.T) {
	path := filepath.Join(t.TempDir(), guard.FileName)
	g, err := guard.Open(guard.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan int, 1)
	f := &fake{name: "ntfy", before: func() {
		var file struct {
			Sent []int64 `json:"sent"`
		}
		data, _ := os.ReadFile(path)
		json.Unmarshal(data, &file)
		seen <- len(file.Sent)
	}}
	d, _, stop := start(t, Options{Guard: g, Providers: []push.Provider{f}})
	defer stop()
	d.Question(q("a", "c", 1))
	if n := <-seen; n != 1 {
		t.Fatalf("the file counted %d pushes as the push left, want 1", n)
	}
}

// TestNoProvider: with no provider configured nothing is decided or
// counted, and collie push test says so.
func TestNoProvider(t *testing.T) {
	d, _, stop := start(t, Options{})
	defer stop()
	if dec := d.Question(q("a", "c", 1)); dec.Reason != ReasonNoProvider {
		t.Fatalf("decision %+v", dec)
	}
	if st := d.o.Guard.Status(); st.Sent+st.Held != 0 {
		t.Fatalf("counted %+v", st.Counters)
	}
	if out := d.Test(context.Background()); out.Answers != nil || out.Held != "" {
		t.Fatalf("test: %+v", out)
	}
}

// TestPushTest: collie push test goes to every provider in use and
// reports each one's answer; a test push is counted only among test
// pushes (3 a minute), so six in a row never hold a question back; the
// fourth in a minute is held back, saying when the next can go, with an
// info line.
func TestPushTest(t *testing.T) {
	now := time.Now()
	g, _ := guard.Open(guard.Options{Now: func() time.Time { return now }})
	bad := &fake{name: "desktop", fail: func(int) error { return errors.New("the notification server did not answer") }}
	good := &fake{name: "ntfy"}
	d, l, stop := start(t, Options{Guard: g, Providers: []push.Provider{good, bad}, URL: func() string { return "https://collie.example/" }})
	defer stop()
	out := d.Test(context.Background())
	want := []TestAnswer{{"ntfy", true, false, "sent"}, {"desktop", false, false, "the notification server did not answer"}}
	if out.Held != "" || fmt.Sprint(out.Answers) != fmt.Sprint(want) {
		t.Fatalf("answers %v held %q, want %v", out.Answers, out.Held, want)
	}
	if m := good.messages()[0]; m.Kind != push.KindTest || m.URL != "https://collie.example/" {
		t.Fatalf("message %+v", m)
	}
	if st := g.Status(); st.Tests != 1 || st.Sent != 0 || st.SentLastHour != 0 {
		t.Fatalf("the test push was counted among questions: %+v", st)
	}
	for range 5 {
		d.Test(context.Background())
	}
	held := 0
	for i := range 10 {
		if dec := d.Question(q("a", fmt.Sprint("c", i), i)); dec.Outcome != guard.Push {
			held++
		}
	}
	if held != 0 {
		t.Fatalf("after six test pushes, %d of 10 questions were held back", held)
	}
	out = d.Test(context.Background())
	if out.Held != guard.ReasonTests || !out.Until.Equal(time.UnixMilli(now.Add(time.Minute).UnixMilli())) {
		t.Fatalf("the fourth test in a minute: %+v", out)
	}
	if n := l.held(MsgTestHeld, guard.ReasonTests+"; the next can go out at"); n != 4 {
		t.Fatalf("%d info lines for 4 test pushes held back (the 4th to 7th)", n)
	}
}

// TestCompose_D4: the push names the agent and the conversation; without
// preview the body holds no question text; the agent's own wording is used
// where it gave one; long names are cut.
func TestCompose_D4(t *testing.T) {
	base := q("deploy", "c1", 1)
	withCopy := base
	withCopy.Push = &wire.PushCopy{Title: "Release waits", Body: "1.2 to prod, 3 services"}
	long := base
	long.AgentTitle, long.ConversationTitle = strings.Repeat("A", 300), strings.Repeat("C", 300)
	for _, tc := range []struct {
		name        string
		q           Question
		preview     bool
		title, body string
	}{
		{"D4_no_preview_no_question_text", base, false, "Deploy bot: a question is waiting", "In Release c1. Open Collie to answer."},
		{"D4_preview_shows_the_question", base, true, "Deploy bot: a question is waiting", "In Release c1: Ship build 1 to prod?"},
		{"D4_agent_title_always", withCopy, false, "Deploy bot: Release waits", "In Release c1. Open Collie to answer."},
		{"D4_agent_body_with_preview", withCopy, true, "Deploy bot: Release waits", "In Release c1: 1.2 to prod, 3 services"},
		{"D4_names_cut", long, false, strings.Repeat("A", NameBytes-3) + "…: a question is waiting", "In " + strings.Repeat("C", NameBytes-3) + "…. Open Collie to answer."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Compose(tc.q, tc.preview, "https://x/")
			if m.Title != tc.title || m.Body != tc.body {
				t.Fatalf("got %q / %q\nwant %q / %q", m.Title, m.Body, tc.title, tc.body)
			}
			if !tc.preview && strings.Contains(m.Title+m.Body, "Ship build") {
				t.Fatal("question text without preview")
			}
			if m.Key != tc.q.Key() || m.URL != "https://x/" || m.Kind != push.KindQuestion {
				t.Fatalf("message %+v", m)
			}
		})
	}
	t.Run("D9_key_is_agent_and_tool_call", func(t *testing.T) {
		a, b := base, base
		a.ToolCall, b.ToolCall = "call-7", "call-7"
		b.Conversation, b.ID = "other", "q9"
		if a.Key() != b.Key() {
			t.Fatal("the same tool call in two questions has two keys")
		}
		c := a
		c.Agent = "other-agent"
		if c.Key() == a.Key() {
			t.Fatal("two agents' tool calls share a key")
		}
		if base.Key() == a.Key() {
			t.Fatal("a question with a tool call and one without share a key")
		}
	})
}

// TestEveryDecisionIsALogLine_D9: every push sent or summarised is a
// debug line carrying the guard's running counts, for the journal; every
// push held back is an info line with its reason and when the next can
// go out; a repeat is none; the summary is an info line too.
func TestEveryDecisionIsALogLine_D9(t *testing.T) {
	now := time.Now()
	g, _ := guard.Open(guard.Options{Now: func() time.Time { return now }})
	d, l, stop := start(t, Options{Guard: g, Providers: []push.Provider{&fake{name: "ntfy"}}})
	defer stop()
	for minute := range 3 {
		for i := range 12 { // 10 sent, 2 held back each minute
			d.Question(q("a", fmt.Sprint("c", minute, "-", i), minute*100+i))
		}
		now = now.Add(time.Minute)
	}
	d.Question(q("a", "last", 999)) // the 31st: the summary
	d.Question(q("a", "last", 999)) // a repeat: nothing
	if sent, held, sum := l.count(slog.LevelDebug, "push sent"), l.held(MsgHeld, guard.ReasonHostMinute+"; the next can go out at"), l.count(slog.LevelDebug, "push summarised"); sent != 30 || held != 6 || sum != 1 {
		t.Fatalf("lines: %d sent (debug), %d held back (info, with when), %d summarised; want 30, 6, 1", sent, held, sum)
	}
	if n := l.count(slog.LevelInfo, "30 pushes in the last hour"); n != 1 {
		t.Fatalf("%d info lines for the summary", n)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Message != "push summarised" {
			continue
		}
		attrs := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		if attrs["sent"] != "30" || attrs["held"] != "6" || attrs["summaries"] != "1" || attrs["waiting"] != "7" {
			t.Fatalf("the summary's line: %v", attrs)
		}
	}
}
