package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
)

// fanFake is a provider with several destinations (a push.Fanout, as Web
// Push is): each destination answers as its behaviour says.
type fanFake struct {
	name string

	mu    sync.Mutex
	dests []push.Destination
	// behave says how the destination key answers try n (1-based) of a
	// message; nil: it takes every push.
	behave map[string]func(ctx context.Context, n int) error
	tries  map[string]map[string]int // key: message title: tries
	took   map[string][]string       // key: titles taken
	at     map[string][]time.Time    // key: when each try began
}

func newFanFake(name string, keys ...string) *fanFake {
	f := &fanFake{name: name, behave: map[string]func(context.Context, int) error{},
		tries: map[string]map[string]int{}, took: map[string][]string{}, at: map[string][]time.Time{}}
	for _, k := range keys {
		f.dests = append(f.dests, push.Destination{Key: k, Name: "device " + k})
	}
	return f
}

// never is a destination that never answers: each try lasts until the
// dispatcher gives up on it.
func never(ctx context.Context, _ int) error {
	<-ctx.Done()
	return fmt.Errorf("no answer: %w", ctx.Err())
}

func (f *fanFake) Name() string { return f.name }

func (f *fanFake) Destinations() []push.Destination {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]push.Destination(nil), f.dests...)
}

func (f *fanFake) SendTo(ctx context.Context, key string, m push.Message) (string, error) {
	f.mu.Lock()
	known := false
	for _, d := range f.dests {
		known = known || d.Key == key
	}
	if !known {
		f.mu.Unlock()
		return "", fmt.Errorf("%s: %w", key, push.ErrGone)
	}
	if f.tries[key] == nil {
		f.tries[key] = map[string]int{}
	}
	f.tries[key][m.Title]++
	n := f.tries[key][m.Title]
	f.at[key] = append(f.at[key], time.Now())
	behave := f.behave[key]
	f.mu.Unlock()
	if behave != nil {
		if err := behave(ctx, n); err != nil {
			return "", err
		}
	}
	f.mu.Lock()
	f.took[key] = append(f.took[key], m.Title)
	f.mu.Unlock()
	return key + " took it", nil
}

func (f *fanFake) Send(ctx context.Context, m push.Message) error {
	for _, d := range f.Destinations() {
		if _, err := f.SendTo(ctx, d.Key, m); err != nil {
			return err
		}
	}
	return nil
}

// count is how many tries key had, and how many pushes it took.
func (f *fanFake) count(key string) (tries, took int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range f.tries[key] {
		tries += n
	}
	return tries, len(f.took[key])
}

// openGuard is a guard on a clock the test moves.
func openGuard(t testing.TB) (*guard.Guard, *clockMu) {
	t.Helper()
	c := &clockMu{now: time.Now()}
	g, err := guard.Open(guard.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return g, c
}

type clockMu struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clockMu) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clockMu) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestRetryOnlyWhereNotTaken_D9: a push goes to every destination on its
// own; a destination that failed is tried again, alone, and one that took
// the push never gets it twice. The guard decided the question once,
// before the fan-out.
func TestRetryOnlyWhereNotTaken_D9(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFanFake("webpush", "phone", "tablet", "laptop")
		f.behave["tablet"] = func(_ context.Context, n int) error {
			if n < 3 {
				return errors.New("web push to device tablet: push.example failed (503)")
			}
			return nil
		}
		g, _ := openGuard(t)
		d, _, stop := start(t, Options{Guard: g, Providers: []push.Provider{f}})
		defer stop()
		if dec := d.Question(q("a", "c", 1)); dec.Outcome != guard.Push {
			t.Fatalf("decision %+v", dec)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		for key, want := range map[string][2]int{"phone": {1, 1}, "tablet": {3, 1}, "laptop": {1, 1}} {
			if tries, took := f.count(key); tries != want[0] || took != want[1] {
				t.Errorf("%s: %d tries, %d taken; want %d, %d", key, tries, took, want[0], want[1])
			}
		}
		if gaps := f.at["tablet"]; gaps[1].Sub(gaps[0]) != Backoff || gaps[2].Sub(gaps[1]) != 2*Backoff {
			t.Errorf("the tablet's tries at %v, want %v then %v apart", gaps, Backoff, 2*Backoff)
		}
		if st := g.Status(); st.Sent != 1 || st.Undelivered != 0 {
			t.Errorf("the guard counted %+v, want one push sent", st.Counters)
		}
		r := d.Last()["webpush"]
		if !r.OK || !r.Delivered || r.Attempts != 3 || !strings.Contains(r.Answer, "tablet took it") || strings.Count(r.Answer, "took it") != 3 {
			t.Errorf("last result %+v", r)
		}
	})
}

// TestDeadDestinationDelaysNoOther_D9: one destination never answers.
// Every try at it ends at push.AttemptTimeout; the other destination of
// the same provider, and another provider, get every push at the instant
// of its question; the dead destination's queue holds at most LaneQueue
// pushes, dropping its own oldest with one warning, and its failure is
// one warning too, not one per push or try.
func TestDeadDestinationDelaysNoOther_D9(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFanFake("webpush", "dead", "phone")
		f.behave["dead"] = never
		other := &fake{name: "ntfy"}
		g, clock := openGuard(t)
		d, l, stop := start(t, Options{Guard: g, Providers: []push.Provider{f, other}})
		defer stop()
		const n = 3 * LaneQueue
		var lateness []time.Duration
		for i := range n {
			clock.Add(10 * time.Minute) // every question may go out
			asked := time.Now()
			if dec := d.Question(q("a", fmt.Sprint("c", i), i)); dec.Outcome != guard.Push {
				t.Fatalf("question %d: %+v", i, dec)
			}
			synctest.Wait()
			f.mu.Lock()
			at := f.at["phone"]
			f.mu.Unlock()
			if len(at) != i+1 {
				t.Fatalf("question %d: the phone had %d pushes", i, len(at))
			}
			lateness = append(lateness, at[i].Sub(asked))
			if w := queued(d, f, "dead"); w > LaneQueue {
				t.Fatalf("%d pushes wait for the dead destination, more than %d", w, LaneQueue)
			}
			time.Sleep(time.Second) // questions a second apart
		}
		for i, late := range lateness {
			if late != 0 {
				t.Fatalf("question %d reached the phone %v after it was asked", i, late)
			}
		}
		if tries, took := f.count("phone"); tries != n || took != n || len(other.messages()) != n {
			t.Fatalf("phone: %d tries, %d taken; ntfy %d; want %d each", tries, took, len(other.messages()), n)
		}
		f.mu.Lock()
		at := f.at["dead"]
		f.mu.Unlock()
		// Tries at the dead destination: 5 s each, 2 s, 4 s, 8 s apart.
		if len(at) < 4 || at[1].Sub(at[0]) != push.AttemptTimeout+Backoff || at[3].Sub(at[2]) != push.AttemptTimeout+4*Backoff {
			t.Fatalf("tries at the dead destination at %v", at)
		}
		if w := l.count(slog.LevelWarn, "a push destination is not keeping up"); w != 1 {
			t.Errorf("%d warnings for the dropped pushes, want 1", w)
		}
		if w := l.count(slog.LevelWarn, "push provider failed"); w != 1 {
			t.Errorf("%d failure warnings, want 1 (the dead destination's first)", w)
		}
		if w := l.count(slog.LevelWarn, "a push was dropped"); w != 0 {
			t.Errorf("%d pushes dropped before the lanes", w)
		}
		if st := g.Status(); st.Sent != n || st.Undelivered != 0 {
			t.Errorf("guard %+v, want %d sent, none undelivered", st.Counters, n)
		}
	})
}

// queued is how many pushes wait in provider p's lane for key.
func queued(d *Dispatcher, p push.Provider, key string) int {
	for _, w := range d.current() {
		if w.p != p {
			continue
		}
		w.mu.Lock()
		l := w.lanes[key]
		w.mu.Unlock()
		if l == nil {
			return 0
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.queue)
	}
	return 0
}

// TestGoneDestination: a destination that went (a device revoked, a
// subscription its service ended) is not retried and is no failure; its
// lane goes, and the push counts as delivered by the ones that took it.
// A push that reached no destination at all is uncounted.
func TestGoneDestination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFanFake("webpush", "phone", "revoked")
		f.behave["revoked"] = func(context.Context, int) error {
			f.mu.Lock()
			f.dests = f.dests[:1] // revoked as the push left
			f.mu.Unlock()
			return fmt.Errorf("device revoked's subscription had ended: %w", push.ErrGone)
		}
		g, clock := openGuard(t)
		d, l, stop := start(t, Options{Guard: g, Providers: []push.Provider{f}})
		defer stop()
		d.Question(q("a", "c", 1))
		time.Sleep(time.Minute)
		synctest.Wait()
		if tries, _ := f.count("revoked"); tries != 1 {
			t.Fatalf("%d tries at a destination that went, want 1", tries)
		}
		if w := l.count(slog.LevelWarn, "push provider failed"); w != 0 {
			t.Fatalf("%d warnings for a destination that went", w)
		}
		clock.Add(10 * time.Minute)
		d.Question(q("a", "c", 2))
		time.Sleep(time.Minute)
		synctest.Wait()
		if tries, _ := f.count("revoked"); tries != 1 {
			t.Fatalf("a second push went to the destination that went")
		}
		if n := lanes(d, f); n != 1 {
			t.Fatalf("%d lanes, want 1", n)
		}
		if st := g.Status(); st.Sent != 2 || st.Undelivered != 0 {
			t.Fatalf("guard %+v", st.Counters)
		}
		// Every destination failing: the push reached no one.
		f.behave["phone"] = func(context.Context, int) error { return push.Permanent(errors.New("refused (400)")) }
		clock.Add(10 * time.Minute)
		d.Question(q("a", "c", 3))
		time.Sleep(time.Minute)
		synctest.Wait()
		if st := g.Status(); st.Sent != 2 || st.Undelivered != 1 {
			t.Fatalf("guard %+v, want the third push uncounted", st.Counters)
		}
	})
}

func lanes(d *Dispatcher, p push.Provider) int {
	for _, w := range d.current() {
		if w.p == p {
			w.mu.Lock()
			defer w.mu.Unlock()
			return len(w.lanes)
		}
	}
	return 0
}

// TestAttemptDeadline: one try at a provider with one destination that
// never answers ends at push.AttemptTimeout too, and collie push test
// waits no longer than that for it.
func TestAttemptDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &fake{name: "ntfy", block: make(chan struct{})}
		g, _ := openGuard(t)
		d, _, stop := start(t, Options{Guard: g, Providers: []push.Provider{stuck}})
		defer stop()
		began := time.Now()
		out := d.Test(context.Background())
		if took := time.Since(began); took != push.AttemptTimeout || len(out.Answers) != 1 || out.Answers[0].OK {
			t.Fatalf("collie push test took %v (want %v): %+v", took, push.AttemptTimeout, out)
		}
		d.Question(q("a", "c", 1))
		time.Sleep(time.Hour)
		synctest.Wait()
		r := d.Last()["ntfy"]
		// 4 tries of 5 s, 2+4+8 s apart: the last ends 34 s after the first began.
		if r.Attempts != Attempts || r.OK || r.At.Sub(began) != push.AttemptTimeout+Attempts*push.AttemptTimeout+14*time.Second {
			t.Fatalf("last result %+v, %v after the test began", r, r.At.Sub(began))
		}
	})
}

// TestSetProvidersStopsLanes: a provider taken out by a reload has its
// lanes stopped (what waits there is dropped, uncounted when it reached no
// one) before SetProviders returns.
func TestSetProvidersStopsLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFanFake("webpush", "dead")
		f.behave["dead"] = never
		g, clock := openGuard(t)
		d, _, stop := start(t, Options{Guard: g, Providers: []push.Provider{f}})
		defer stop()
		for i := range 3 {
			clock.Add(10 * time.Minute)
			d.Question(q("a", fmt.Sprint("c", i), i))
		}
		synctest.Wait()
		d.SetProviders(nil, false)
		synctest.Wait()
		if st := g.Status(); st.Undelivered != 3 {
			t.Fatalf("guard %+v, want the 3 pushes uncounted", st.Counters)
		}
	})
}
