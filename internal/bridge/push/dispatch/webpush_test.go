package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// The real Web Push provider, through the push-service double on
// loopback: what a device's push service receives.

// memSubs is the device store's subscriptions, in memory.
type memSubs struct {
	mu sync.Mutex
	ts []webpush.Target
}

func (s *memSubs) PushTargets() []webpush.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ts)
}

func (s *memSubs) DropPushSubscription(device, endpoint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ts = slices.DeleteFunc(s.ts, func(t webpush.Target) bool { return t.Device == device && t.Sub.Endpoint == endpoint })
	return nil
}

// subscribe makes a subscription at svc for the provider, as a device's
// page does, and stores it for device.
func (s *memSubs) subscribe(t testing.TB, svc *pushtest.Service, wp *webpush.Provider, device string) *pushtest.Sub {
	t.Helper()
	sub := svc.Subscribe(t, wp.PublicKey())
	dec, err := webpush.DecodeSubscription(sub.JSON())
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.ts = append(s.ts, webpush.Target{Device: device, Sub: dec})
	s.mu.Unlock()
	return sub
}

// wpRig is a dispatcher with the Web Push provider, a healthy device and,
// when asked, a device whose push service never answers.
type wpRig struct {
	svc           *pushtest.Service
	d             *Dispatcher
	l             *logs
	g             *guard.Guard
	clock         *clockMu
	healthy, dead *pushtest.Sub
	asked         int
}

func newWPRig(t testing.TB, withDead bool) *wpRig {
	t.Helper()
	r := &wpRig{svc: pushtest.New(t, nil)}
	subs := &memSubs{}
	wp, err := webpush.New(webpush.Options{StateDir: t.TempDir(), Subscriptions: subs, Client: r.svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if withDead {
		r.dead = subs.subscribe(t, r.svc, wp, "d-dead")
		r.svc.Hang(r.dead)
	}
	r.healthy = subs.subscribe(t, r.svc, wp, "d-phone")
	r.g, r.clock = openGuard(t)
	var stop func()
	r.d, r.l, stop = start(t, Options{Guard: r.g, Providers: []push.Provider{wp}})
	t.Cleanup(stop)
	return r
}

// ask asks the next question and returns how long after it the healthy
// device's push service received its push.
func (r *wpRig) ask(t testing.TB) time.Duration {
	t.Helper()
	i := r.asked
	r.asked++
	r.clock.Add(10 * time.Minute) // the guard lets every question out
	asked := time.Now()
	if dec := r.d.Question(q("a", fmt.Sprint("c", i), i)); dec.Outcome != guard.Push {
		t.Fatalf("question %d: %+v", i, dec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var at time.Time
	err := r.svc.Await(ctx, func(ps []pushtest.Push) bool {
		n := 0
		for _, p := range ps {
			if p.Endpoint == r.healthy.Endpoint {
				if n == i {
					at = p.At
					return true
				}
				n++
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("question %d: no push reached the healthy device in 30 s", i)
	}
	return at.Sub(asked)
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(float64(len(s))*p+0.999999) - 1
	return s[max(k, 0)]
}

// TestDeadPushServiceDelaysNoOther_D9: with one device's push service
// never answering and one healthy, each of 50 questions reaches the
// healthy device within 1 s (p99); it gets each push exactly once, the
// dead one takes none, and nothing is dropped. Real TLS on loopback, on
// the machine's clock.
func TestDeadPushServiceDelaysNoOther_D9(t *testing.T) {
	r := newWPRig(t, true)
	const n = 50
	var lat []time.Duration
	for range n {
		lat = append(lat, r.ask(t))
	}
	p50, p99 := percentile(lat, 0.50), percentile(lat, 0.99)
	t.Logf("healthy device's push after its question, one push service never answering: p50 %v, p99 %v over %d questions (load %s)", p50, p99, n, testenv.Load())
	if p99 > time.Second {
		t.Errorf("p99 %v, want at most 1 s", p99)
	}
	taken := r.svc.Taken()
	if taken[r.healthy.Endpoint] != n || taken[r.dead.Endpoint] != 0 {
		t.Errorf("taken: healthy %d, dead %d; want %d, 0", taken[r.healthy.Endpoint], taken[r.dead.Endpoint], n)
	}
	tags := map[string]int{}
	for _, p := range r.svc.Pushes() {
		if p.Endpoint != r.healthy.Endpoint {
			continue
		}
		var pl struct{ Tag string }
		if err := json.Unmarshal(p.Payload, &pl); err != nil {
			t.Fatal(err)
		}
		tags[pl.Tag]++
	}
	if len(tags) != n {
		t.Errorf("the healthy device got %d different pushes, want %d", len(tags), n)
	}
	for tag, k := range tags {
		if k != 1 {
			t.Errorf("push %s reached the healthy device %d times", tag, k)
		}
	}
	for _, msg := range []string{"a push destination is not keeping up", "a push was dropped"} {
		if k := r.l.count(slog.LevelWarn, msg); k != 0 {
			t.Errorf("%d lines %q", k, msg)
		}
	}
	if st := r.g.Status(); st.Sent != n || st.Undelivered != 0 {
		t.Errorf("guard %+v, want %d sent", st.Counters, n)
	}
}

// BenchmarkPushBesideDeadService: the healthy device's push latency with
// a dead push service beside it, against a healthy device alone, asked
// side by side in the same run; the ratio of their p99s should be near 1.
func BenchmarkPushBesideDeadService(b *testing.B) {
	alone, beside := newWPRig(b, false), newWPRig(b, true)
	var la, lb []time.Duration
	for b.Loop() {
		la = append(la, alone.ask(b))
		lb = append(lb, beside.ask(b))
	}
	pa, pb := percentile(la, 0.99), percentile(lb, 0.99)
	b.ReportMetric(float64(percentile(lb, 0.5).Microseconds())/1000, "p50-ms-beside-dead")
	b.ReportMetric(float64(pb.Microseconds())/1000, "p99-ms-beside-dead")
	b.ReportMetric(float64(pa.Microseconds())/1000, "p99-ms-alone")
	b.ReportMetric(float64(pb)/float64(pa), "p99-ratio")
	b.Logf("load %s", testenv.Load())
}

// TestRetryAfterWebPush_D9: a device's push service answers 503 with a
// Retry-After in one of its forms; the push is tried again there, alone,
// after what it asked (at least the backoff), while the other device got
// it once. On loopback, on synctest's clock: time stands while a request
// is on the wire.
func TestRetryAfterWebPush_D9(t *testing.T) {
	epoch := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // synctest's clock starts here
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		wait       time.Duration
	}{
		{"seconds", 503, "7", 7 * time.Second},
		{"imf_fixdate", 503, epoch.Add(40 * time.Second).Format(http.TimeFormat), 40 * time.Second},
		{"rfc850_date", 503, epoch.Add(40 * time.Second).Format("Monday, 02-Jan-06 15:04:05 GMT"), 40 * time.Second},
		{"asctime_date", 429, epoch.Add(40 * time.Second).Format(time.ANSIC), 40 * time.Second},
		{"past_date", 503, epoch.Add(-time.Hour).Format(http.TimeFormat), Backoff},
		{"shorter_than_backoff", 503, "1", Backoff},
		{"none", 500, "", Backoff},
		{"not_a_date", 503, "soon", Backoff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The double runs outside the bubble; its tokens' clock is
			// the bubble's.
			svc := pushtest.New(t, func() time.Time { return epoch })
			tls := svc.Client().Transport.(*http.Transport).TLSClientConfig
			synctest.Test(t, func(t *testing.T) {
				if !time.Now().Equal(epoch) {
					t.Fatalf("synctest's clock starts at %v", time.Now())
				}
				// One connection per push: an idle kept-alive connection
				// would stop synctest's clock.
				hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tls.Clone(), DisableKeepAlives: true}}
				subs := &memSubs{}
				wp, err := webpush.New(webpush.Options{StateDir: t.TempDir(), Subscriptions: subs, Client: hc})
				if err != nil {
					t.Fatal(err)
				}
				timed := &timedWP{Provider: wp, at: map[string][]time.Time{}}
				phone := subs.subscribe(t, svc, wp, "d-phone")
				busy := subs.subscribe(t, svc, wp, "d-busy")
				svc.Replies(busy, pushtest.Reply{Status: tc.status, RetryAfter: tc.retryAfter})
				g, _ := openGuard(t)
				d, _, stop := start(t, Options{Guard: g, Providers: []push.Provider{timed}})
				defer stop()
				d.Question(q("a", "c", 1))
				time.Sleep(time.Hour)
				synctest.Wait()
				sent, taken := map[string]int{}, svc.Taken()
				for _, p := range svc.Pushes() {
					sent[p.Endpoint]++
				}
				if sent[phone.Endpoint] != 1 || taken[phone.Endpoint] != 1 || sent[busy.Endpoint] != 2 || taken[busy.Endpoint] != 1 {
					t.Fatalf("phone: %d sent, %d taken (want 1, 1); busy: %d sent, %d taken (want 2, 1)",
						sent[phone.Endpoint], taken[phone.Endpoint], sent[busy.Endpoint], taken[busy.Endpoint])
				}
				at := timed.tries(busy.Endpoint)
				if len(at) != 2 || at[1].Sub(at[0]) != tc.wait {
					t.Fatalf("tries at the busy device at %v, want %v apart", at, tc.wait)
				}
				if st := g.Status(); st.Sent != 1 || st.Undelivered != 0 {
					t.Fatalf("guard %+v", st.Counters)
				}
			})
		})
	}
}

// timedWP is the Web Push provider, noting when each try at each
// destination began.
type timedWP struct {
	*webpush.Provider
	mu sync.Mutex
	at map[string][]time.Time
}

func (p *timedWP) SendTo(ctx context.Context, key string, m push.Message) (string, error) {
	p.mu.Lock()
	p.at[key] = append(p.at[key], time.Now())
	p.mu.Unlock()
	return p.Provider.SendTo(ctx, key, m)
}

func (p *timedWP) tries(key string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.at[key])
}
