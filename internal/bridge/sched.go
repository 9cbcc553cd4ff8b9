package bridge

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Scheduling (K8). One goroutine and one timer serve every
// agent: a heap of agents ordered by when each is next due. An agent is
// in one of three states:
//
//   - waiting: its agent honours waiting reads (upstream.Waiter, the agent
//     marks its answers Collie-Waited). One read is held at the agent until
//     its state changes or the wait (Wait, 60 s) ends, and the next goes out
//     as soon as it returns. A held read over the socket costs this
//     goroutine and the connection's descriptor (over HTTPS, also the
//     connection's two goroutines in net/http's transport), and no timer
//     of ours: see the package doc's figures. A socket agent's path is
//     walked again, by name, every IdleInterval while its read is held
//     (T4: a path that turns unsafe is unreachable at once, not at the
//     end of the wait).
//   - polled: its agent answered at once, unmarked (it does not know
//     waiting reads). Read at the seed's cadence (K8): every 10 s, every 2 s
//     while a device watches. Each read still asks for the wait, so an
//     upgraded agent is found at its next read.
//   - down: the last read failed (unreachable, token refused). Asked again
//     no sooner than 10 s after the last read was sent, whatever its mode
//     (K8).
//
// Between reads an agent has no goroutine and no timer: only its place in
// the heap.

// Wait is the wait the bridge asks of an agent, the longest the protocol
// allows: an idle agent that honours it is asked once a minute, at most
// 1,440 requests a day, a sixth of the seed's 8,640.
const Wait = wire.MaxWait * time.Second

// cutMargin is how much shorter than a cut wait the next one asks for, so
// that it ends at the agent before the proxy cuts it.
const cutMargin = 5 * time.Second

// cutMemory is how long a shortened wait is kept before the full one is
// tried again (the cut may have been a restart, not a proxy).
const cutMemory = time.Hour

// Pacing of an agent whose state keeps changing: a read that found a
// change goes out again at once while the agent has tokens left (a burst
// of paceBurst), and then no more often than paceRate a second, so that an
// agent changing without pause cannot keep the bridge reading and cleaning
// it flat out.
const (
	paceBurst = 20
	paceRate  = 5.0
)

// The modes shown in collie durable list (view.AgentStatus.Mode).
const (
	modeWaiting = "waiting read"
	modeFirst   = "first read"
)

// mode is the agent's mode as collie durable list shows it. Callers hold
// b.mu.
func (b *Bridge) mode(a *agent) string {
	switch a.state {
	case stateWaiting:
		if a.wait < b.o.Wait {
			return "waiting read, " + every(a.wait) + " (a proxy cut a longer one)"
		}
		return modeWaiting
	case statePolled:
		return "polled every " + every(b.next(a))
	case stateDown:
		return "retried every " + every(b.o.Interval)
	}
	return modeFirst
}

// every writes d as collie durable list says it: "10 s", "2 s", "50ms".
func every(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}

// state is how an agent is read.
type state int

const (
	stateFirst state = iota
	stateWaiting
	statePolled
	stateDown
)

// agentHeap orders agents by when they are next due.
type agentHeap []*agent

func (h agentHeap) Len() int           { return len(h) }
func (h agentHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h agentHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *agentHeap) Push(x any) {
	a := x.(*agent)
	a.index = len(*h)
	*h = append(*h, a)
}
func (h *agentHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	a.index = -1
	return a
}

// dueAt (re)places a in the heap at t. Callers hold b.mu.
func (b *Bridge) dueAt(a *agent, t time.Time) {
	if a.ctx.Err() != nil {
		return // detached
	}
	earlier := len(b.heap) == 0 || t.Before(b.heap[0].due)
	a.due = t
	if a.index >= 0 {
		heap.Fix(&b.heap, a.index)
	} else {
		heap.Push(&b.heap, a)
	}
	if earlier {
		b.kick()
	}
}

// unschedule takes a out of the heap. Callers hold b.mu.
func (b *Bridge) unschedule(a *agent) {
	if a.index >= 0 {
		heap.Remove(&b.heap, a.index)
	}
}

// kick wakes the scheduler to look at the heap again.
func (b *Bridge) kick() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// startScheduler starts the one scheduling goroutine, once. Callers hold
// b.mu.
func (b *Bridge) startScheduler() {
	if b.schedCancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.schedCancel = cancel
	b.wg.Add(1)
	go b.schedule(ctx)
}

// schedule starts each agent's read when it is due, and walks the paths
// of socket agents held in waiting reads, until ctx ends.
func (b *Bridge) schedule(ctx context.Context) {
	defer b.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var walks []*agent
		b.mu.Lock()
		now := time.Now()
		for len(b.heap) > 0 && !b.heap[0].due.After(now) {
			a := heap.Pop(&b.heap).(*agent)
			if a.reading {
				walks = append(walks, a) // its read is held: walk its path (T4)
			} else {
				b.startRead(a, now)
			}
		}
		b.mu.Unlock()
		if len(walks) > 0 {
			b.walk(walks)
			continue // the walks took time: look at the heap again
		}
		b.mu.Lock()
		if len(b.heap) > 0 {
			timer.Reset(b.heap[0].due.Sub(now))
		} else {
			timer.Stop()
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-b.wake:
		}
	}
}

// heldFailed ends a held read: its socket path failed the T2 walk, or a
// read beside it (Check) failed. The held read is recorded with that error,
// as of at, as a new read would be.
type heldFailed struct {
	err error
	at  time.Time
}

func (e *heldFailed) Error() string { return e.err.Error() }

// walk runs the T2 walk for socket agents whose reads are held: a path
// that turned unsafe ends the held read, and the agent is unreachable with
// the walk's exact reason (T3, T4); a path that passes makes the status
// current. Nothing is sent to the agent.
func (b *Bridge) walk(agents []*agent) {
	type result struct {
		a   *agent
		at  time.Time
		err error
	}
	results := make([]result, 0, len(agents))
	for _, a := range agents {
		at := time.Now()
		// The walk by name (lstat from / down, T2): the same rules and
		// reasons as the walk before a connection, at a third of its
		// system calls, since nothing is connected to here.
		_, err := sockpath.Identify(a.src.Socket, b.o.UID)
		results = append(results, result{a, at, err})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range results {
		a := r.a
		if !a.reading || a.stopRead == nil {
			continue // the read returned meanwhile; it scheduled the agent
		}
		if r.err != nil {
			a.stopRead(&heldFailed{&upstream.Unreachable{Reason: r.err.Error(), Err: r.err}, r.at})
			continue
		}
		if a.status.Reachable && r.at.After(a.status.Checked) {
			a.status.Checked = r.at
		}
		b.dueAt(a, r.at.Add(b.o.Interval))
	}
}

// startRead starts a read of a in a goroutine of its own, for as long as
// the read lasts. Callers hold b.mu.
func (b *Bridge) startRead(a *agent, now time.Time) {
	if a.wait < b.o.Wait && now.Sub(a.cutAt) > cutMemory {
		a.wait = b.o.Wait // try the full wait again
	}
	wait := a.wait
	if a.waiter == nil {
		wait = 0
	}
	ctx, stop := context.WithCancelCause(a.ctx)
	a.reading, a.stopRead, a.sent = true, stop, now
	if wait > 0 && a.src.Socket != "" {
		// Walk the path while the read is held (T4).
		b.dueAt(a, now.Add(b.o.Interval))
	}
	b.wg.Add(1)
	go b.read(ctx, stop, a, wait)
}

// read reads a once: hello first when its name is not known, then the
// snapshot, waiting up to wait at the agent when wait > 0. The read's
// context is its own: stop releases it when the read is done (a context
// never cancelled stays among a.ctx's children for as long as the agent
// is attached, a kilobyte a read).
func (b *Bridge) read(ctx context.Context, stop context.CancelCauseFunc, a *agent, wait time.Duration) {
	defer b.wg.Done()
	defer stop(nil)
	b.mu.Lock()
	etag, name, began := a.etag, a.status.Agent, a.sent
	b.mu.Unlock()

	var hello *wire.Hello
	var rd upstream.Read
	var err error
	if name == "" {
		hctx, cancel := context.WithTimeout(ctx, pollTimeout)
		hello, err = a.client.Hello(hctx)
		cancel()
	}
	if err == nil {
		if wait > 0 {
			// The client's own timeout counts beyond the wait.
			rd, err = a.waiter.SnapshotWait(ctx, etag, wait)
		} else {
			pctx, cancel := context.WithTimeout(ctx, pollTimeout)
			rd, err = a.client.Snapshot(pctx, etag)
			cancel()
		}
	}
	var hf *heldFailed
	if errors.As(context.Cause(ctx), &hf) {
		err, hello, rd, began = hf.err, nil, upstream.Read{}, hf.at
	} else if a.ctx.Err() != nil {
		b.mu.Lock()
		a.reading, a.stopRead = false, nil
		b.mu.Unlock()
		return // detached or stopping: the outcome means nothing
	}
	b.record(a, began, hello, rd, err)
}

// reschedule decides a's next read from the outcome of the one sent at
// sent, and sets its state. Callers hold b.mu.
func (b *Bridge) reschedule(a *agent, sent time.Time, rd upstream.Read, err error) {
	now := time.Now()
	var cut *upstream.WaitCut
	switch {
	case errors.As(err, &cut):
		// Something cut the wait: a restart of the agent, or a proxy.
		// Read again no sooner than a down agent would be (K8); a second
		// cut in a row is a proxy: ask for less than either held.
		if a.lastCut > 0 {
			a.wait = max(min(a.wait, a.lastCut, cut.Held).Truncate(time.Second)-cutMargin, time.Second)
			a.cutAt, a.lastCut = now, 0
		} else {
			a.lastCut = cut.Held
		}
		a.state = stateWaiting
		b.dueAt(a, later(now, sent.Add(b.o.Interval)))
	case err != nil:
		a.state = stateDown
		b.dueAt(a, later(now, sent.Add(b.o.Interval)))
	case rd.Waited && rd.ETag != "":
		a.state = stateWaiting
		if rd.NotModified {
			a.lastCut = 0
			// The wait ended: wait again at once. An agent that applies
			// a shorter wait than the cadence is asked no more often.
			b.dueAt(a, later(now, sent.Add(b.next(a))))
		} else {
			b.dueAt(a, b.pace(a, now))
		}
	default:
		// Answered at once, unmarked (or with no ETag to wait on): the
		// seed's cadence (K8).
		a.state = statePolled
		b.dueAt(a, now.Add(b.next(a)))
	}
}

// pace returns when a read of an agent that just changed may go out: now
// while it has tokens, else when the next token comes. Callers hold b.mu.
func (b *Bridge) pace(a *agent, now time.Time) time.Time {
	if !a.tokAt.IsZero() {
		a.tokens = min(paceBurst, a.tokens+now.Sub(a.tokAt).Seconds()*paceRate)
	} else {
		a.tokens = paceBurst
	}
	a.tokAt = now
	if a.tokens >= 1 {
		a.tokens--
		return now
	}
	at := now.Add(time.Duration((1 - a.tokens) / paceRate * float64(time.Second)))
	a.tokens, a.tokAt = 0, at
	return at
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// readNow asks for a read of a at once, unless one is under way. Callers
// hold b.mu.
func (b *Bridge) readNow(a *agent) {
	if a.polled == nil || a.reading {
		return
	}
	b.dueAt(a, time.Now())
}
