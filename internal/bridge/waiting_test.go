package bridge

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// bubbleBridge is a bridge inside a synctest bubble reading one memAgent,
// with the real cadence (K8) and the real wait. changes counts its
// Changed calls.
func bubbleBridge(t *testing.T, m *memAgent) (b *Bridge, changes *atomic.Int64, stop func()) {
	t.Helper()
	changes = &atomic.Int64{}
	b = New(Options{Log: quiet(), Changed: func() { changes.Add(1) }})
	ctx, cancel := context.WithCancel(t.Context())
	b.ctx = ctx
	b.mu.Lock()
	b.add(sources.Source{Name: "a", Socket: ""}, m.client(), nil)
	b.mu.Unlock()
	return b, changes, func() {
		cancel()
		b.stopAll()
		m.hs.Close()
		synctest.Wait()
	}
}

func status(b *Bridge) view.AgentStatus { return b.Agents()[0] }

// TestWaitingReadIdleDay_K8: an idle agent costs at most 1,440 requests a
// day when it honours waiting reads, counted at the agent over one
// simulated day, over both transports (the socket's handler and the token
// transport's, K7); an agent that ignores the wait is polled at the seed's
// cadence, 8,640 a day, and collie durable list says which.
func TestWaitingReadIdleDay_K8(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       agentOptions
		perDay  int64
		mode    string
		watched int64 // a minute while a device watches
	}{
		{"socket_waiting", agentOptions{}, 1440, modeWaiting, 1},
		{"https_waiting", agentOptions{remote: true}, 1440, modeWaiting, 1},
		{"socket_ignores_the_wait", agentOptions{ignores: true}, 8640, "polled every 10 s", 30},
		{"https_ignores_the_wait", agentOptions{remote: true, ignores: true}, 8640, "polled every 10 s", 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := startMemAgent(t, tc.o)
				b, _, stop := bubbleBridge(t, m)
				defer stop()
				synctest.Wait()
				if st := status(b); !st.Reachable || st.Mode != tc.mode {
					t.Fatalf("status %+v, want reachable in mode %q", st, tc.mode)
				}
				time.Sleep(time.Second) // off the read instants
				n0 := m.requests.Load()
				time.Sleep(24 * time.Hour)
				synctest.Wait()
				n := m.requests.Load() - n0
				if n > tc.perDay || n < tc.perDay*99/100 {
					t.Errorf("%d requests at the agent in a day, want %d", n, tc.perDay)
				}
				t.Logf("%s: %d requests at the agent in one idle day", tc.name, n)
				// While a device watches: a held read changes nothing; a
				// polled agent goes to every 2 s (K8), read at once.
				b.SetWatching(true)
				synctest.Wait()
				n0 = m.requests.Load()
				time.Sleep(time.Minute - time.Second)
				synctest.Wait()
				if n := m.requests.Load() - n0; n > tc.watched {
					t.Errorf("%d requests in a minute while a device watches, want at most %d", n, tc.watched)
				}
				b.SetWatching(false)
			})
		})
	}
}

// TestWaitingReadReleasedByChange: a change at the agent reaches the
// bridge's view, and its Changed hook, at the instant it happens (0 s of
// fake time; the real figure is BenchmarkQuestionLatency's), with one
// request; the read that follows is held again.
func TestWaitingReadReleasedByChange(t *testing.T) {
	for _, remote := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			m := startMemAgent(t, agentOptions{remote: remote})
			b, changes, stop := bubbleBridge(t, m)
			defer stop()
			synctest.Wait()
			time.Sleep(17 * time.Second) // mid-wait
			n0, c0 := m.requests.Load(), changes.Load()
			changed := time.Now()
			setTitle(t, m.srv, "two")
			synctest.Wait()
			if got := b.View()[0].Snapshot.Spaces[0].Title; got != "two" {
				t.Fatalf("the bridge shows %q at %s after the change, want it at once", got, time.Since(changed))
			}
			if changes.Load() != c0+1 {
				t.Errorf("Changed called %d times for one change, want once", changes.Load()-c0)
			}
			if n := m.requests.Load() - n0; n != 1 {
				t.Errorf("%d requests to see one change, want 1 (the read that follows it)", n)
			}
			time.Sleep(59 * time.Second)
			synctest.Wait()
			if n := m.requests.Load() - n0; n != 1 {
				t.Errorf("the read after the change was not held: %d requests in the next 59 s", n)
			}
		})
	}
}

// TestDownAgentK8: an agent that refuses the token or is not there is
// asked at most once every 10 s, whatever its mode was (K6, K8).
func TestDownAgentK8(t *testing.T) {
	t.Run("K6_token_refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startMemAgent(t, agentOptions{remote: true})
			b, _, stop := bubbleBridge(t, m)
			defer stop()
			synctest.Wait()
			m.token.Store("another-token-0123456789abcdef0123456789abcd") // a rotation the bridge missed
			time.Sleep(61 * time.Second)                                  // the held read ends; the next is refused
			synctest.Wait()
			if st := status(b); st.Reachable || st.Reason != "the agent refused the token" || st.Mode != "retried every 10 s" {
				t.Fatalf("status %+v", st)
			}
			n0 := m.requests.Load()
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			if n := m.requests.Load() - n0; n > 30 {
				t.Errorf("a refusing agent was asked %d times in 5 minutes, want at most 30 (K8)", n)
			}
		})
	})
	t.Run("T4_not_there", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startMemAgent(t, agentOptions{})
			b, _, stop := bubbleBridge(t, m)
			defer stop()
			synctest.Wait()
			time.Sleep(20 * time.Second)
			m.hs.Close() // the agent stops: its held read is cut at once
			m.l.Close()
			synctest.Wait()
			if st := status(b); st.Reachable {
				t.Fatalf("status %+v after the agent stopped, want unreachable at once", st)
			}
			d0 := m.l.Dials()
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			if n := m.l.Dials() - d0; n > 30 {
				t.Errorf("a stopped agent was dialled %d times in 5 minutes, want at most 30 (K8)", n)
			}
		})
	})
}

// cutAfter is a reverse proxy whose read timeout is d: a request the agent
// has not answered within d gets 504 (waiting reads through
// ordinary proxies).
func cutAfter(d time.Duration) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.TimeoutHandler(h, d, "")
	}
}

// TestProxyCutRetry: a proxy that cuts waits at 25 s makes the bridge ask
// for 20 s after the second cut in a row, and stay below the proxy; one that cuts at 3 s leaves reads no
// more often than every 10 s (K8), never a loop.
func TestProxyCutRetry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cut    time.Duration
		mode   string
		perDay int64
	}{
		// 25 s: below the test server's own 30 s write timeout, which
		// would otherwise race the proxy's answer.
		{"cut_at_25s", 25 * time.Second, "waiting read, 20 s (a proxy cut a longer one)", 86400 / 20},
		{"cut_at_3s", 3 * time.Second, "waiting read, 1 s (a proxy cut a longer one)", 8640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := startMemAgent(t, agentOptions{remote: true, front: cutAfter(tc.cut)})
				b, _, stop := bubbleBridge(t, m)
				defer stop()
				synctest.Wait()
				// Two cuts in a row: the first may be a restart, not a proxy.
				time.Sleep(2*tc.cut + 11*time.Second)
				synctest.Wait()
				if st := status(b); !st.Reachable || st.Mode != tc.mode {
					t.Fatalf("after the cut: %+v, want reachable in mode %q", st, tc.mode)
				}
				n0 := m.requests.Load()
				time.Sleep(12 * time.Hour)
				synctest.Wait()
				if n := m.requests.Load() - n0; n > tc.perDay/2+1 {
					t.Errorf("%d requests in 12 hours, want at most %d", n, tc.perDay/2+1)
				}
				if st := status(b); !st.Reachable {
					t.Errorf("status %+v", st)
				}
			})
		})
	}
}
