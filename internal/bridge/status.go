package bridge

// The control socket's backend (control.Backend): the agents' statuses
// and views as the bridge holds them, and Check, which reads them again
// before collie durable list shows them.

import (
	"context"
	"sort"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
)

// Agents implements control.Backend.
func (b *Bridge) Agents() []view.AgentStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]view.AgentStatus, 0, len(b.agents))
	for _, a := range b.agents {
		out = append(out, a.status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Fresh is how recent a status must be for Check to take it as it is;
// an older one is polled again.
const Fresh = time.Second

// checkWait bounds how long Check waits for the polls it asked for.
const checkWait = 5 * time.Second

// Check implements control.Backend: it reads now every agent whose status
// is older than Fresh and waits (up to 5 s, or ctx) for those reads, so
// that collie durable list shows what is true now, not up to 10 s ago.
// An agent that is down is read too: the user asked. An agent held in a
// waiting read gets one more read beside it, without a wait (the held one
// answers only at a change). A read still running when the wait ends
// leaves that agent's status as it was, with its Checked time saying how
// old it is.
func (b *Bridge) Check(ctx context.Context) []view.AgentStatus {
	since := time.Now().Add(-b.o.Fresh)
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	b.mu.Lock()
	var waits []*agent
	for _, a := range b.agents {
		if a.polled == nil || !a.status.Checked.Before(since) {
			continue // never read (its reason is its settings), or fresh
		}
		waits = append(waits, a)
		switch {
		case !a.reading:
			b.readNow(a)
		case a.state == stateWaiting && a.status.Reachable && a.stopRead != nil:
			b.wg.Add(1)
			go b.checkHeld(a, a.stopRead)
		}
		// Otherwise a read that does not wait is under way: its outcome.
	}
	b.mu.Unlock()
	for _, a := range waits {
		b.waitPolled(ctx, a, since)
	}
	return b.Agents()
}

// checkHeld reads a, whose read stop ends is held at the agent, once
// without a wait. A failure ends the held read with the same error, so the
// agent is down and retried as any other.
func (b *Bridge) checkHeld(a *agent, stop context.CancelCauseFunc) {
	defer b.wg.Done()
	ctx, cancel := context.WithTimeout(a.ctx, pollTimeout)
	defer cancel()
	b.mu.Lock()
	etag := a.etag
	b.mu.Unlock()
	began := time.Now()
	rd, err := a.client.Snapshot(ctx, etag)
	if a.ctx.Err() != nil {
		return
	}
	if err != nil {
		stop(&heldFailed{err, began}) // the held read records it
		return
	}
	b.mu.Lock()
	if a.ctx.Err() != nil {
		b.mu.Unlock()
		return
	}
	b.apply(a, began, nil, rd, nil, false)
}

// waitPolled waits until a read of a that began after since is recorded,
// ctx ends or a is detached.
func (b *Bridge) waitPolled(ctx context.Context, a *agent, since time.Time) {
	for {
		b.mu.Lock()
		fresh, polled := a.status.Checked.After(since), a.polled
		b.mu.Unlock()
		if fresh {
			return
		}
		select {
		case <-polled:
		case <-a.ctx.Done():
			return
		case <-ctx.Done():
			return
		}
	}
}

// View implements control.Backend.
func (b *Bridge) View() []view.Agent {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]view.Agent, 0, len(b.agents))
	for _, a := range b.agents {
		out = append(out, view.Agent{AgentStatus: a.status, Snapshot: a.snap, Lineage: a.line})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
