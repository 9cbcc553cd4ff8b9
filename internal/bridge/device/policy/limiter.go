package policy

import (
	"container/list"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limiter is a token bucket per key (a device, a source): a flood is
// refused rather than passed on.
type Limiter struct {
	rate  float64 // tokens a second
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*list.Element // of order; values are *bucket
	order   *list.List               // least recently used first
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

// maxBuckets bounds a limiter's memory: it never holds more buckets than
// this. Past it, the least recently used bucket is forgotten. That key,
// if it comes back, starts again with a full burst, as a new key does:
// a flood of distinct keys gains nothing it does not have already, and a
// key in steady use is the last to go, so it keeps its place.
const maxBuckets = 4096

func NewLimiter(rate, burst float64, now func() time.Time) *Limiter {
	return &Limiter{rate: rate, burst: burst, now: now, buckets: map[string]*list.Element{}, order: list.New()}
}

// Take takes a token for key; without one, wait is how long until the
// next one is there.
func (l *Limiter) Take(key string) (ok bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e, ok := l.buckets[key]
	if ok {
		l.order.MoveToBack(e)
	} else {
		if l.order.Len() >= maxBuckets {
			oldest := l.order.Front()
			delete(l.buckets, oldest.Value.(*bucket).key)
			l.order.Remove(oldest)
		}
		e = l.order.PushBack(&bucket{key: key, tokens: l.burst, last: now})
		l.buckets[key] = e
	}
	b := e.Value.(*bucket)
	b.tokens = min(l.burst, b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens--
	return true, 0
}

// Refusal is what a 429 says: the limit as it is (a burst, then a steady
// rate) and when the next request is let through, which it also sets as
// Retry-After (whole seconds, rounded up).
func (l *Limiter) Refusal(w http.ResponseWriter, wait time.Duration) (limit, when string) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	when = "in 1 second"
	if secs > 1 {
		when = fmt.Sprintf("in %d seconds", secs)
	}
	return l.describe(), when
}

// describe says the limit in words: "40 at once, then 10 a second".
func (l *Limiter) describe() string {
	rate := ""
	switch {
	case l.rate >= 1:
		rate = fmt.Sprintf("%g a second", l.rate)
	case l.rate > 0:
		rate = fmt.Sprintf("one every %g seconds", 1/l.rate)
	}
	return fmt.Sprintf("at most %g at once, then %s", l.burst, rate)
}
