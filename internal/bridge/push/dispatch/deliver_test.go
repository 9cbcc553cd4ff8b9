package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
)

// idleFake is a provider with nowhere to deliver to while why is set, as
// Web Push before any device turned notifications on.
type idleFake struct {
	*fake
	why string
}

func (f *idleFake) Idle() string { return f.why }

// TestOnlyDeliveredCounts_D9: what the guard counts is pushes delivered
// to at least one destination. A question whose push every provider
// failed all its tries, or that reached a provider with a partial
// failure but some destinations, and a provider with nowhere to send
// (not in use): 40 questions with nothing that can deliver leave the
// guard's windows empty, so neither a summary nor an hour of silence
// comes before the first notification is ever turned on.
func TestOnlyDeliveredCounts_D9(t *testing.T) {
	for _, tc := range []struct {
		name        string
		providers   func() []push.Provider
		sent        int64 // counted at the end
		undelivered int64
		summaries   int64
		inUse       []string
		idle        []string
	}{
		{"no_destination", func() []push.Provider {
			return []push.Provider{&idleFake{&fake{name: "webpush"}, "no paired device has turned on notifications yet"}}
		}, 0, 0, 0, []string{}, []string{"webpush: no paired device has turned on notifications yet"}},
		{"every_try_failed", func() []push.Provider {
			return []push.Provider{&fake{name: "ntfy", fail: func(int) error { return errors.New("ntfy at https://ntfy.sh answered 502") }}}
		}, 0, 40, 0, []string{"ntfy"}, nil},
		{"refused_at_once", func() []push.Provider {
			return []push.Provider{&fake{name: "ntfy", fail: func(int) error { return push.Permanent(errors.New("401")) }}}
		}, 0, 40, 0, []string{"ntfy"}, nil},
		{"one_of_two_delivered", func() []push.Provider {
			return []push.Provider{&fake{name: "ntfy", fail: func(int) error { return push.Permanent(errors.New("401")) }}, &fake{name: "desktop"}}
		}, 30, 0, 1, []string{"ntfy", "desktop"}, nil}, // delivered: the 31st is the summary
		{"some_destinations", func() []push.Provider {
			return []push.Provider{&fake{name: "webpush", fail: func(int) error {
				return push.Permanent(&push.PartialError{Delivered: 1, Err: errors.New("web push to device d-2: refused (400)")})
			}}}
		}, 30, 0, 1, []string{"webpush"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				now := time.Now()
				g, _ := guard.Open(guard.Options{Now: func() time.Time { return now }})
				d, _, stop := start(t, Options{Guard: g, Providers: tc.providers()})
				defer stop()
				for i := range 40 {
					d.Question(q("a", fmt.Sprint("c", i), i))
					time.Sleep(time.Minute) // every retry done
					synctest.Wait()
					now = now.Add(10 * time.Second) // 40 questions in under 7 minutes
				}
				st := g.Status()
				if st.Sent != tc.sent || st.Undelivered != tc.undelivered || st.Summaries != tc.summaries {
					t.Fatalf("counters %+v, want %d sent, %d undelivered, %d summaries", st.Counters, tc.sent, tc.undelivered, tc.summaries)
				}
				if tc.sent == 0 && (st.SentLastHour != 0 || st.HoldingBack != "") {
					t.Fatalf("pushes nobody got fill the windows: %+v", st)
				}
				if got := d.Providers(); fmt.Sprint(got) != fmt.Sprint(tc.inUse) {
					t.Errorf("providers in use %v, want %v", got, tc.inUse)
				}
				if got := d.Idle(); fmt.Sprint(got) != fmt.Sprint(tc.idle) {
					t.Errorf("idle %v, want %v", got, tc.idle)
				}
			})
		})
	}
}

// TestIdleProvider_D9: a provider with nowhere to deliver to is not in
// use: no question is decided through it (so none is remembered as
// decided), collie push test says it has nothing to deliver rather than
// ok, and once it has a destination it is used.
func TestIdleProvider_D9(t *testing.T) {
	web := &idleFake{&fake{name: "webpush"}, "no paired device has turned on notifications yet"}
	d, l, stop := start(t, Options{Providers: []push.Provider{web}})
	defer stop()
	if dec := d.Question(q("a", "c", 1)); dec.Outcome != guard.Held || dec.Reason != ReasonNoProvider {
		t.Fatalf("decision %+v", dec)
	}
	out := d.Test(context.Background())
	if len(out.Answers) != 1 || !out.Answers[0].Idle || out.Answers[0].OK || out.Answers[0].Answer != web.why || out.Held != "" {
		t.Fatalf("test with nowhere to deliver: %+v", out)
	}
	if st := d.o.Guard.Status(); st.Sent+st.Held+st.Tests != 0 {
		t.Fatalf("counted %+v", st.Counters)
	}
	if n := len(web.messages()); n != 0 {
		t.Fatalf("%d pushes sent through an idle provider", n)
	}
	if l.count(slog.LevelInfo, MsgHeld) != 0 {
		t.Fatal("a question with no provider in use was logged as held back by the guard")
	}
	web.why = ""
	if dec := d.Question(q("a", "c", 1)); dec.Outcome != guard.Push {
		t.Fatalf("the same question once a device subscribed: %+v", dec)
	}
}

// TestSetProviders: a reload puts new providers in place; a provider
// kept keeps its worker, a new one is used at once, and one removed gets
// nothing more.
func TestSetProviders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		kept, gone, added := &fake{name: "webpush"}, &fake{name: "desktop"}, &fake{name: "ntfy"}
		d, _, stop := start(t, Options{Providers: []push.Provider{kept, gone}})
		defer stop()
		d.Question(q("a", "c", 1))
		synctest.Wait()
		d.SetProviders([]push.Provider{kept, added}, true)
		if !d.Preview() || fmt.Sprint(d.Providers()) != "[webpush ntfy]" {
			t.Fatalf("after SetProviders: preview %v, providers %v", d.Preview(), d.Providers())
		}
		d.Question(q("a", "c", 2))
		synctest.Wait()
		if len(kept.messages()) != 2 || len(gone.messages()) != 1 || len(added.messages()) != 1 {
			t.Fatalf("pushes: kept %d, removed %d, added %d; want 2, 1, 1", len(kept.messages()), len(gone.messages()), len(added.messages()))
		}
	})
}
