package guard

import (
	"fmt"
	"testing"
	"time"
)

// TestGuardUntil_D9: a push held back says when pushes go out again, for
// every limit, and that is true: at that instant the next one goes out,
// a millisecond before it does not.
func TestGuardUntil_D9(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name   string
		fill   []ask
		held   ask           // the one held back
		until  time.Duration // when the next goes out
		status bool          // Status says it too (the host's limits)
	}{
		{"conversation", []ask{{at: 0, conv: "c", want: Push}, {at: 5 * time.Second, conv: "c", want: Push}, {at: 9 * time.Second, conv: "c", want: Push}},
			ask{at: 20 * time.Second, conv: "c", want: Held, reason: ReasonConversation}, time.Minute, false},
		{"host_minute", seq(burst(0, "a", 4, Push, ""), burst(7*time.Second, "b", 6, Push, "")),
			ask{at: 30 * time.Second, conv: "z", want: Held, reason: ReasonHostMinute}, time.Minute, true},
		{"tests", nil, ask{}, 0, false},
		{"silent", seq(thirty(), []ask{{at: 3 * time.Minute, conv: "s", want: Summary}}),
			ask{at: 4 * time.Minute, conv: "z", want: Held, reason: ReasonSilent}, 3*time.Minute + Silence, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			g := open(t, c, "")
			if tc.name == "tests" {
				for range TestsPerMinute {
					c.set(2 * time.Second)
					g.Test()
				}
				c.set(10 * time.Second)
				d := g.Test()
				if d.Outcome != Held || d.Reason != ReasonTests || !d.Until.Equal(t0.Add(time.Minute+2*time.Second)) {
					t.Fatalf("the fourth test: %+v", d)
				}
				c.set(time.Minute + 2*time.Second - ms)
				if d := g.Test(); d.Outcome != Held {
					t.Fatalf("before Until: %+v", d)
				}
				c.set(time.Minute + 2*time.Second)
				if d := g.Test(); d.Outcome != Push {
					t.Fatalf("at Until: %+v", d)
				}
				return
			}
			run(t, c, g, append(tc.fill, tc.held))
			c.set(tc.held.at)
			if st := g.Status(); tc.status && !st.Until.Equal(t0.Add(tc.until)) {
				t.Errorf("status %+v, want until %v", st, t0.Add(tc.until))
			}
			c.set(tc.until - ms)
			d := g.Decide("just-before", tc.held.conv)
			if d.Outcome != Held || !d.Until.Equal(t0.Add(tc.until)) {
				t.Fatalf("a millisecond before: %+v, want held until %v", d, t0.Add(tc.until))
			}
			c.set(tc.until)
			if d := g.Decide("at-until", tc.held.conv); d.Outcome != Push {
				t.Fatalf("at the Until it said: %+v", d)
			}
		})
	}
}

// TestGuardUndelivered_D9: a push no provider delivered anywhere counts
// nothing: its place in the conversation's and the host's windows is
// freed, and the counters say it was not delivered. Uncounting twice does
// nothing more; a summary's silent hour stays.
func TestGuardUndelivered_D9(t *testing.T) {
	c := newClock()
	g := open(t, c, "")
	for i := range 50 {
		d := g.Decide(fmt.Sprint("k", i), "c")
		if d.Outcome != Push {
			t.Fatalf("question %d, none delivered before it: %+v", i, d)
		}
		g.Undelivered(&d)
		g.Undelivered(&d)
	}
	st := g.Status()
	if st.Sent != 0 || st.Undelivered != 50 || st.SentLastHour != 0 || st.HoldingBack != "" {
		t.Fatalf("after 50 undelivered: %+v", st)
	}
	tp := g.Test()
	g.Undelivered(&tp)
	if st := g.Status(); st.Tests != 0 || st.Undelivered != 51 {
		t.Fatalf("after an undelivered test: %+v", st)
	}
	// A summary that went nowhere: uncounted, but the hour stays silent.
	run(t, c, g, thirty())
	c.set(3 * time.Minute)
	s := g.Decide("summary", "s")
	if s.Outcome != Summary {
		t.Fatalf("the 31st: %+v", s)
	}
	g.Undelivered(&s)
	if st := g.Status(); st.Summaries != 0 || st.SentLastHour != 30 || st.HoldingBack != ReasonSilent {
		t.Fatalf("after an undelivered summary: %+v", st)
	}
	// A held decision counted nothing: nothing to uncount.
	h := g.Decide("held", "s")
	g.Undelivered(&h)
	if st := g.Status(); st.Undelivered != 52 || st.Held != 1 {
		t.Fatalf("uncounting a held decision: %+v", st)
	}
}
