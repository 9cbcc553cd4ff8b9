package bridge

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// countingClient is an agent in memory that counts its reads; refuse
// makes it refuse the token as a real HTTPS agent does.
type countingClient struct {
	reads  atomic.Int64
	refuse bool
}

func (c *countingClient) Hello(context.Context) (*wire.Hello, error) {
	c.reads.Add(1)
	if c.refuse {
		return nil, &upstream.Unreachable{Reason: "the agent refused the token"}
	}
	return &wire.Hello{Agent: "r"}, nil
}

func (c *countingClient) Snapshot(context.Context, string) (upstream.Read, error) {
	c.reads.Add(1)
	return upstream.Read{NotModified: true}, nil
}

func (c *countingClient) Write(context.Context, string, wire.WriteRequest) (*wire.WriteReply, error) {
	return &wire.WriteReply{}, nil
}

// startCounting attaches client under name and schedules its first read,
// as Bridge.start does for a real source.
func startCounting(b *Bridge, name string, client upstream.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(sources.Source{Name: name}, client, nil)
}

// TestBridgeCadenceK8Synctest counts polls in fake time at the real
// cadence: a reachable agent every 10 s while no device looks and every
// 2 s while one does; an agent that refuses the token every 10 s, device
// or not (K6, K8: the counts do not depend on how fast
// the machine is).
func TestBridgeCadenceK8Synctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		b := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		b.ctx = ctx
		good, bad := &countingClient{}, &countingClient{refuse: true}
		startCounting(b, "good", good)
		startCounting(b, "bad", bad)
		defer func() { cancel(); b.stopAll() }()

		synctest.Wait() // the first polls, at once
		if st := b.Agents(); len(st) != 2 {
			t.Fatalf("agents: %+v", st)
		}
		for _, st := range b.Agents() {
			if st.Name == "bad" && st.Reason != "the agent refused the token" {
				t.Fatalf("K6: bad = %+v", st)
			}
			if st.Name == "good" && !st.Reachable {
				t.Fatalf("good = %+v", st)
			}
		}
		// count is the reads of each in the next d: the windows start off
		// the poll instants, so no poll falls on their edges.
		count := func(d time.Duration) (int64, int64) {
			g0, b0 := good.reads.Load(), bad.reads.Load()
			time.Sleep(d)
			synctest.Wait()
			return good.reads.Load() - g0, bad.reads.Load() - b0
		}
		time.Sleep(5 * time.Second) // t = 5 s; polls were at 0

		// Idle: polls at 10, 20, …, 60.
		if g, bd := count(time.Minute); g != 6 || bd != 6 {
			t.Errorf("K8 idle: %d and %d polls in a minute, want 6 each (every %s)", g, bd, IdleInterval)
		}
		// t = 65 s: a device looks; the reachable agent is read at once,
		// then at 67, 69, …, 125; bad stays at 70, 80, …, 120.
		g0 := good.reads.Load()
		b.SetWatching(true)
		synctest.Wait()
		if good.reads.Load() == g0 {
			t.Error("K8: a device started looking and the reachable agent was not read at once")
		}
		if g, bd := count(61 * time.Second); g != 30 || bd != 6 {
			t.Errorf("K8 watching: %d polls of the reachable agent in 61 s (want 30, every %s) and %d of the one refusing the token (want 6, every %s)", g, ActiveInterval, bd, IdleInterval)
		}
		// t = 126 s: no device; the timer set at 125 fires at 127, then
		// every 10 s: 127, 137, …, 177.
		b.SetWatching(false)
		if g, _ := count(time.Minute); g != 6 {
			t.Errorf("K8 back to idle: %d polls in a minute, want 6", g)
		}
	})
}
