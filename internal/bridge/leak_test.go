package bridge

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/bridge/upstream"
)

// waitingClient is an agent in memory that honours waiting reads and never
// changes: each read is held for the wait asked, then answered "not
// modified", as a real idle agent answers.
type waitingClient struct {
	countingClient
}

func (c *waitingClient) SnapshotWait(ctx context.Context, etag string, wait time.Duration) (upstream.Read, error) {
	c.reads.Add(1)
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return upstream.Read{}, ctx.Err()
	}
	return upstream.Read{ETag: `"idle"`, NotModified: true, Waited: true}, nil
}

func (c *waitingClient) Close() {}

var _ upstream.Waiter = (*waitingClient)(nil)

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestBridgeHeapFlatOverReads_K8 reads one agent tens of thousands of
// times, polled and held in waiting reads, in fake time, and holds the
// bridge's live heap flat across them: whatever a read allocates must be
// released when it is recorded. A read's cancellable context dropped
// without its cancel stays among the agent's context's children for as
// long as the agent is attached (about 1 kB a read, 1.4 GB a day at 1,000
// idle agents): that fails here.
func TestBridgeHeapFlatOverReads_K8(t *testing.T) {
	const (
		warm  = 2_000
		reads = 20_000
		// perRead is the live heap a read may leave behind, averaged:
		// far below a context's hundreds of bytes, far above noise.
		perRead = 16
	)
	for _, tc := range []struct {
		name   string
		client interface {
			upstream.Client
			count() int64
		}
	}{
		{"polled", &countingClient{}},
		{"waiting", &waitingClient{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				b := New(Options{Log: quiet(), Interval: time.Millisecond, Active: time.Millisecond, Wait: time.Millisecond})
				b.ctx = ctx
				startCounting(b, "a", tc.client)
				defer func() { cancel(); b.stopAll() }()

				until := func(n int64) {
					for tc.client.count() < n {
						time.Sleep(time.Second)
					}
					synctest.Wait()
				}
				until(warm)
				before, n0 := heapAfterGC(), tc.client.count()
				until(warm + reads)
				after, n1 := heapAfterGC(), tc.client.count()
				if st := b.Agents(); len(st) != 1 || !st[0].Reachable {
					t.Fatalf("agent = %+v", st)
				}
				grew := int64(after) - int64(before)
				if per := grew / (n1 - n0); per > perRead {
					t.Fatalf("the live heap grew %d bytes over %d reads (%d a read, at most %d allowed): a read leaves something behind", grew, n1-n0, per, perRead)
				}
				t.Logf("%d reads: live heap %d → %d bytes", n1-n0, before, after)
			})
		})
	}
}

func (c *countingClient) count() int64 { return c.reads.Load() }
