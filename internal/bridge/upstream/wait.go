package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Waiter is a Client whose snapshot read can wait at the agent for a
// change. Every client this package makes is one.
//
// The bridge's loop for one agent is:
//
//	rd, err := c.SnapshotWait(ctx, etag, wait)
//
// and, when rd.Waited, the next read goes out at once (the agent held this
// one until its state changed or the wait ended). Without rd.Waited the
// agent does not know waiting reads: read it at the seed's cadence (K8),
// still with a wait, so an upgraded agent is found on its next read. On an
// error, the next read of that agent goes out no sooner than 10 s after
// this one was sent (K8); a *WaitCut error (a proxy cut the wait short)
// asks for a shorter wait next time, below WaitCut.Held.
type Waiter interface {
	Client
	// SnapshotWait reads the snapshot as Snapshot does, sending etag in
	// If-None-Match. With wait > 0 it asks the agent to hold the read
	// until its ETag differs from etag or wait ends (wire.WaitHeader, whole
	// seconds, rounded up and capped at wire.MaxWait). ctx ends the read
	// whenever the caller likes; the client's own timeout counts from the
	// end of the wait. wait 0 is today's read.
	SnapshotWait(ctx context.Context, etag string, wait time.Duration) (Read, error)
	// Close closes the connections the client keeps. A read after Close
	// connects anew.
	Close()
}

// WaitCut is the error of a waiting read that something between the bridge
// and the agent cut short: after the read had been held at least a second,
// a 502, 503 or 504 (a reverse proxy's read timeout) or a dropped
// connection. Ask next time for a wait shorter than Held.
type WaitCut struct {
	Held time.Duration // how long the read was held before it was cut
	Err  error         // what cut it, cleaned
}

func (e *WaitCut) Error() string {
	return fmt.Sprintf("the waiting read was cut after %s (a proxy's read timeout shorter than the wait?): %v", e.Held.Round(time.Second), e.Err)
}

func (e *WaitCut) Unwrap() error { return e.Err }

// minCut is how long a read must have been held before its failure counts
// as a cut wait rather than an agent that is down.
const minCut = time.Second

// waitSeconds turns a wait into the header's whole seconds: 0 for none,
// else rounded up and capped at wire.MaxWait.
func waitSeconds(wait time.Duration) int {
	if wait <= 0 {
		return 0
	}
	return int(min((wait+time.Second-1)/time.Second, wire.MaxWait))
}

func (r *reader) snapshot(ctx context.Context, etag string, wait time.Duration) (Read, error) {
	secs := waitSeconds(wait)
	sent := time.Now()
	base := r.deltas.take(etag)
	defer r.deltas.release(base)
	resp, err := r.get(ctx, wire.SnapshotPath, etag, secs, base != nil)
	if err != nil {
		return Read{}, r.forgetUnlessCut(cutOr(ctx, secs, sent, err))
	}
	defer resp.Body.Close()
	waited := honoured(resp, secs)
	switch resp.StatusCode {
	case http.StatusNotModified:
		// A 304 marked as waited that came before the wait it names is an
		// agent that answers at once: polled at the cadence, never in a
		// loop as fast as it answers.
		if applied, _ := wire.ParseWait(resp.Header.Get(wire.WaitedHeader)); time.Since(sent) < time.Duration(applied)*time.Second*9/10 {
			waited = false
		}
		return Read{ETag: etag, NotModified: true, Waited: waited}, nil
	case http.StatusOK:
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return Read{}, cutOr(ctx, secs, sent, statusError(resp))
	default:
		r.deltas.forget()
		return Read{}, statusError(resp)
	}
	if resp.Header.Get(wire.DeltaHeader) != "" {
		return r.readDelta(ctx, resp, base, etag, waited)
	}
	snap, rep, err := wire.DecodeSnapshot(resp.Body, resp.ContentLength)
	if err != nil {
		r.deltas.forget()
		return Read{}, err
	}
	tag := resp.Header.Get("ETag")
	if !validETag(tag) {
		tag = "" // never echoed: the next read asks for the whole state
	}
	st := wire.NewState(snap, rep)
	r.deltas.keep(tag, st)
	return Read{Snapshot: snap, Report: rep, ETag: tag, Waited: waited, Lineage: st.Lineage}, nil
}

// honoured reports whether the agent marked its answer to a read that asked
// for secs seconds as waited, with a wait of 1 to secs seconds.
func honoured(resp *http.Response, secs int) bool {
	if secs == 0 {
		return false
	}
	n, ok := wire.ParseWait(resp.Header.Get(wire.WaitedHeader))
	return ok && n <= secs
}

// cutOr returns err as a *WaitCut when a waiting read held at least minCut
// failed in a way a proxy's timeout looks like; otherwise err as it is.
// The caller's own cancellation and the client's timeout are not cuts, nor
// is an agent found unreachable.
func cutOr(ctx context.Context, secs int, sent time.Time, err error) error {
	held := time.Since(sent)
	if secs == 0 || held < minCut || ctx.Err() != nil || errors.Is(err, errTimedOut) {
		return err
	}
	var u *Unreachable
	if errors.As(err, &u) {
		return err
	}
	return &WaitCut{Held: held, Err: cleanErr(err)}
}

// errTimedOut is the cause of a request the client's timeout ended.
var errTimedOut = errors.New("timed out")

// do sends req with r's time limits: r.timeout plus the wait for the
// reply's headers, and for the whole body too when r.whole is set. The
// body, once read, must be closed, which releases the limit.
func (r *reader) do(req *http.Request, wait time.Duration) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	limit := r.timeout + wait
	timer := time.AfterFunc(limit, func() { cancel(errTimedOut) })
	resp, err := r.hc.Do(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		if errors.Is(context.Cause(ctx), errTimedOut) {
			err = fmt.Errorf("%w: the agent did not answer within %s", errTimedOut, limit)
		}
		cancel(nil)
		return nil, err
	}
	if !r.whole {
		timer.Stop()
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, ctx: ctx, limit: limit, release: func() { timer.Stop(); cancel(nil) }}
	return resp, nil
}

// limitedBody releases its request's time limit when closed, and names the
// limit when it ended the body.
type limitedBody struct {
	io.ReadCloser
	ctx     context.Context
	limit   time.Duration
	release func()
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.ctx), errTimedOut) {
		err = fmt.Errorf("%w: the agent's reply did not end within %s", errTimedOut, b.limit)
	}
	return n, err
}

func (b *limitedBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// Snapshot reads the agent's state, sending etag so an unchanged state
// costs a 304 (K7). It is SnapshotWait with no wait.
func (r *reader) Snapshot(ctx context.Context, etag string) (Read, error) {
	return r.SnapshotWait(ctx, etag, 0)
}

// SnapshotWait implements Waiter.
func (r *reader) SnapshotWait(ctx context.Context, etag string, wait time.Duration) (Read, error) {
	rd, err := r.snapshot(ctx, etag, wait)
	return rd, cleanErr(err)
}

// Close implements Waiter.
func (r *reader) Close() { r.hc.CloseIdleConnections() }
