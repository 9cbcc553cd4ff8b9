package upstream

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Snapshot deltas (wire.ExtDelta). A reader keeps the state of its last
// snapshot read, cleaned (wire.State), and its ETag. A read that sends that
// ETag announces the extension, and an agent that knows it may answer with
// only what changed: the reader applies it to the kept state, cleaning only
// what the delta brings, and the Read carries the new state. A delta that
// does not apply cleanly is refused, and the same call reads the whole
// snapshot at once. Agents that ignore the extension answer whole, as
// before.

// deltaState is what a reader keeps for deltas.
type deltaState struct {
	mu   sync.Mutex
	etag string
	st   *wire.State
	// busy: a read that asked for a delta is under way. One at a time, so
	// each delta extends the newest state (and may append in place); a
	// read beside it asks for the whole snapshot.
	busy bool
}

// take returns the kept state when it is etag's and takes deltas, and
// marks a delta read under way; nil when this read asks for none.
func (d *deltaState) take(etag string) *wire.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	if etag == "" || d.busy || d.etag != etag || !d.st.Deltas() {
		return nil
	}
	d.busy = true
	return d.st
}

// release ends the delta read take began, when base is not nil.
func (d *deltaState) release(base *wire.State) {
	if base == nil {
		return
	}
	d.mu.Lock()
	d.busy = false
	d.mu.Unlock()
}

// keep records st as the state of etag; an invalid ETag ("") keeps none.
func (d *deltaState) keep(etag string, st *wire.State) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if etag == "" {
		st = nil
	}
	d.etag, d.st = etag, st
}

// forget drops the kept state: the next read is whole.
func (d *deltaState) forget() { d.keep("", nil) }

// forgetUnlessCut forgets the kept state after a failed read, unless a
// proxy or a restart cut a waiting read short: the bridge keeps its state
// then, and so does the reader. It returns err.
func (r *reader) forgetUnlessCut(err error) error {
	var cut *WaitCut
	if !errors.As(err, &cut) {
		r.deltas.forget()
	}
	return err
}

// readDelta reads the delta in resp, an answer to a read that sent etag
// and took base, and applies it. A refused delta forgets the kept state
// and reads the whole snapshot now; its Report says why the delta was
// refused.
func (r *reader) readDelta(ctx context.Context, resp *http.Response, base *wire.State, etag string, waited bool) (Read, error) {
	tag := resp.Header.Get("ETag")
	if !validETag(tag) {
		tag = ""
	}
	var why error
	if base == nil || resp.Header.Get(wire.DeltaHeader) != etag {
		why = wire.NewCleanError("the agent sent a delta from a snapshot other than the one Collie holds", nil)
	}
	var ns *wire.State
	var rep wire.Report
	if why == nil {
		var d *wire.Delta
		if d, _, why = wire.DecodeDelta(resp.Body, resp.ContentLength); why == nil {
			ns, rep, why = base.Apply(d)
		}
	}
	resp.Body.Close()
	if why != nil {
		r.deltas.forget()
		rd, err := r.snapshot(ctx, "", 0)
		if err != nil {
			return rd, err
		}
		rd.Report.Dropped = append([]wire.Drop{{What: "the agent's delta", Reason: "refused, so Collie read the whole snapshot: " + agentText(why.Error())}}, rd.Report.Dropped...)
		rd.Waited = waited
		return rd, nil
	}
	r.deltas.keep(tag, ns)
	return Read{Snapshot: ns.Snap, Report: rep, ETag: tag, Waited: waited, Lineage: ns.Lineage, Delta: true}, nil
}
