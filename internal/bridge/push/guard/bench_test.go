package guard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// BenchmarkGuardVsPoll is the guard's cost per question beside a poll's,
// side by side in one run (the machine may be shared; each side's fastest
// run counts): Decide for a new question (a digest of its key and
// conversation, the windows, the decision; on a host that has been pushing
// and holding for an hour, the usual case under a flood) against one idle
// poll of an agent by the bridge's client over its Unix socket (the T2
// walk, the peer check, GET /v1/snapshot with If-None-Match, a 304).
// x_poll is the ratio: the guard must be negligible beside the poll.
func BenchmarkGuardVsPoll(b *testing.B) {
	path := filepath.Join(b.TempDir(), "desk", "a.sock")
	l, err := privsock.Listen(path)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: "bench"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	defer func() { cancel(); <-done }()
	c := upstream.NewSocket(path, os.Getuid())
	defer c.Close()
	rd, err := c.Snapshot(ctx, "")
	if err != nil {
		b.Fatal(err)
	}

	now := t0
	g, _ := Open(Options{Now: func() time.Time { return now }})
	// An hour of a flood behind it: the windows full, thousands of keys.
	for i := range MemoryKeys {
		now = t0.Add(time.Duration(i) * 200 * time.Millisecond)
		g.Decide(fmt.Sprint("warm-", i), fmt.Sprint("conv-", i%64))
	}
	var guard, poll time.Duration
	i := 0
	for b.Loop() {
		i++
		key, conv := fmt.Sprintf("agent\x00call-%d", i), fmt.Sprintf("agent\x00conv-%d", i%64)
		now = now.Add(100 * time.Millisecond)
		t1 := time.Now()
		g.Decide(key, conv)
		t2 := time.Now()
		if r, err := c.Snapshot(ctx, rd.ETag); err != nil || !r.NotModified {
			b.Fatal(err, r.NotModified)
		}
		t3 := time.Now()
		guard, poll = fastest(guard, t2.Sub(t1)), fastest(poll, t3.Sub(t2))
	}
	b.ReportMetric(float64(guard)/float64(poll), "x_poll")
	b.ReportMetric(float64(guard.Nanoseconds()), "guard_ns")
	b.ReportMetric(float64(poll.Nanoseconds())/1e3, "poll_µs")
}

func fastest(best, d time.Duration) time.Duration {
	if best == 0 || d < best {
		return max(d, 1)
	}
	return best
}
