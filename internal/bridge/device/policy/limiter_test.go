package policy

import (
	"strconv"
	"testing"
	"time"
)

// TestLimiterMemoryIsBounded_D6: a flood of distinct keys (sources from
// many addresses, faster than any bucket refills) never makes a limiter
// hold more than maxBuckets buckets, and a key in steady use at its rate
// is let through all along. (The bound used to forget only buckets that
// had filled up again, so a fast flood grew the map without end.)
func TestLimiterMemoryIsBounded_D6(t *testing.T) {
	cases := []struct {
		name        string
		rate, burst float64
		every       time.Duration // the steady key's pace: within its rate
	}{
		{"source_writes", 10, 40, 200 * time.Millisecond},
		{"device_writes", 5, 20, 250 * time.Millisecond},
		{"pairing", 0.2, 5, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
			l := NewLimiter(c.rate, c.burst, clock.now)
			steady := "phone"
			next := clock.now()
			for i := range 3 * maxBuckets {
				if !clock.now().Before(next) {
					if ok, wait := l.Take(steady); !ok {
						t.Fatalf("the steady key was refused after %d flood keys (wait %v)", i, wait)
					}
					next = clock.now().Add(c.every)
				}
				l.Take("flood-" + strconv.Itoa(i))
				if n := len(l.buckets); n > maxBuckets {
					t.Fatalf("%d buckets after %d flood keys, bound %d", n, i+1, maxBuckets)
				}
				if i%50 == 49 {
					clock.add(time.Millisecond) // 50 new keys a millisecond
				}
			}
			if n := len(l.buckets); n != maxBuckets {
				t.Errorf("%d buckets at the end, want the bound %d", n, maxBuckets)
			}
			// The limit itself still holds for the steady key.
			for i := range int(c.burst) + 1 {
				if ok, _ := l.Take(steady); !ok {
					if i == 0 {
						t.Fatal("the steady key has no token left")
					}
					return
				}
			}
			t.Errorf("the steady key took more than a burst of %g at once", c.burst)
		})
	}
}
