package upstream

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

// memReader is the protocol's reader over an in-memory connection to l,
// with the socket transport's timeout: the reader's waiting logic on
// synctest's clock.
func memReader(l *memnet.Listener) *reader {
	return &reader{base: "http://agent", timeout: SocketTimeout,
		hc: &http.Client{Transport: &http.Transport{DialContext: l.DialContext}}}
}

// TestSnapshotWaitReference: SnapshotWait against the reference agent
// (durable.Server with a board) on synctest's clock: a read held until the
// board changes comes back at that very instant with the new snapshot and
// Waited; one held to the end of its wait is a 304 with Waited; a read
// without a wait is today's read, at once, Waited false (K7, K8).
func TestSnapshotWaitReference(t *testing.T) {
	for _, tt := range []struct {
		name     string
		wait     time.Duration
		change   time.Duration // 0: no change
		after    time.Duration
		modified bool
		waited   bool
	}{
		{"held_released_by_change", 60 * time.Second, 17 * time.Second, 17 * time.Second, true, true},
		{"304_at_wait_end", 40 * time.Second, 0, 40 * time.Second, false, true},
		{"wait_rounded_up_to_seconds", 1500 * time.Millisecond, 0, 2 * time.Second, false, true},
		{"no_wait_is_todays_read", 0, 0, 0, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := memnet.New()
				s, err := durable.NewServer(wire.Hello{Agent: "a"}, durabletest.Quiet())
				if err != nil {
					t.Fatal(err)
				}
				b, err := board.New(s, board.Options{Space: wire.Space{ID: "s", Title: "S"}, Tab: wire.Space{ID: "t", Title: "T"}, Main: struct{ ID, Title string }{"main", "M"}, Log: durabletest.Quiet()})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Stop()
				ctx, cancel := context.WithCancel(t.Context())
				served := make(chan error, 1)
				go func() { served <- s.ServeTransport(ctx, l, durable.Transport{Unchecked: true}) }()
				r := memReader(l)
				defer func() { r.Close(); cancel(); <-served }()

				first, err := r.SnapshotWait(ctx, "", tt.wait)
				if err != nil || first.ETag == "" {
					t.Fatalf("first read: %+v, %v", first, err)
				}
				if first.Waited != (tt.wait > 0) {
					t.Fatalf("first read Waited = %v for a wait of %v", first.Waited, tt.wait)
				}
				type result struct {
					rd    Read
					err   error
					after time.Duration
				}
				done := make(chan result, 1)
				start := time.Now()
				go func() {
					rd, err := r.SnapshotWait(ctx, first.ETag, tt.wait)
					done <- result{rd, err, time.Since(start)}
				}()
				if tt.change > 0 {
					time.Sleep(tt.change)
					synctest.Wait()
					select {
					case res := <-done:
						t.Fatalf("the read ended after %v, before the change: %+v", res.after, res)
					default:
					}
					b.AppendItem("main", wire.Item{Kind: wire.KindText, Role: "agent", Text: "news"})
				}
				res := <-done
				if res.err != nil {
					t.Fatal(res.err)
				}
				if res.after != tt.after || res.rd.NotModified == tt.modified || res.rd.Waited != tt.waited {
					t.Fatalf("after %v: NotModified %v Waited %v; want after %v, modified %v, waited %v", res.after, res.rd.NotModified, res.rd.Waited, tt.after, tt.modified, tt.waited)
				}
				if tt.modified && (res.rd.Snapshot == nil || res.rd.ETag == first.ETag) {
					t.Fatalf("a changed read without its new snapshot: %+v", res.rd)
				}
			})
		})
	}
}

// TestSnapshotWaitOtherAgents: agents that are not the reference agent,
// and what stands between: an agent that does not know the wait answers at
// once and is read as Waited false (the bridge falls back to the seed's
// cadence, K8); one that marks a 304 it did not hold is not trusted with
// Waited; a proxy's 504 or dropped connection after a held read is a
// *WaitCut, an agent down behind a proxy (an immediate 502) is not; an
// agent holding past the wait is ended by the client's timeout counted
// from the wait's end.
func TestSnapshotWaitOtherAgents(t *testing.T) {
	const etag = `"e1"`
	hold := func(d time.Duration, then func(http.ResponseWriter)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			then(w)
		}
	}
	notModified := func(w http.ResponseWriter) { w.Header().Set("ETag", etag); w.WriteHeader(304) }
	for _, tt := range []struct {
		name   string
		h      http.HandlerFunc
		after  time.Duration
		waited bool
		cut    time.Duration // a *WaitCut with this Held
		errIs  error
	}{
		{name: "K8_agent_without_wait_support", h: hold(0, notModified), waited: false},
		{name: "marks_a_304_it_did_not_hold", h: hold(0, func(w http.ResponseWriter) {
			w.Header().Set(wire.WaitedHeader, "30")
			notModified(w)
		}), waited: false},
		{name: "marks_a_wait_longer_than_asked", h: hold(30*time.Second, func(w http.ResponseWriter) {
			w.Header().Set(wire.WaitedHeader, "60")
			notModified(w)
		}), after: 30 * time.Second, waited: false},
		{name: "applies_a_shorter_wait", h: hold(20*time.Second, func(w http.ResponseWriter) {
			w.Header().Set(wire.WaitedHeader, "20")
			notModified(w)
		}), after: 20 * time.Second, waited: true},
		{name: "proxy_504_after_hold", h: hold(25*time.Second, func(w http.ResponseWriter) { w.WriteHeader(504) }), after: 25 * time.Second, cut: 25 * time.Second},
		{name: "proxy_drops_connection_after_hold", h: hold(25*time.Second, func(http.ResponseWriter) { panic(http.ErrAbortHandler) }), after: 25 * time.Second, cut: 25 * time.Second},
		{name: "K8_immediate_502_is_not_a_cut", h: hold(0, func(w http.ResponseWriter) { w.WriteHeader(502) }), errIs: errNotCut},
		{name: "held_past_the_wait_ends_at_timeout", h: hold(time.Hour, notModified), after: 30*time.Second + SocketTimeout, errIs: errTimedOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := memnet.New()
				srv := &http.Server{Handler: tt.h}
				go srv.Serve(l)
				r := memReader(l)
				defer func() { r.Close(); srv.Close() }()
				start := time.Now()
				rd, err := r.SnapshotWait(t.Context(), etag, 30*time.Second)
				after := time.Since(start)
				if after != tt.after {
					t.Errorf("answered after %v, want %v", after, tt.after)
				}
				var cut *WaitCut
				switch {
				case tt.cut > 0:
					if !errors.As(err, &cut) || cut.Held != tt.cut {
						t.Fatalf("err = %v, want a *WaitCut held %v", err, tt.cut)
					}
				case tt.errIs == errNotCut:
					if err == nil || errors.As(err, &cut) {
						t.Fatalf("err = %v, want an error that is not a cut wait", err)
					}
				case tt.errIs != nil:
					if !errors.Is(err, tt.errIs) || errors.As(err, &cut) {
						t.Fatalf("err = %v, want %v", err, tt.errIs)
					}
				default:
					if err != nil {
						t.Fatal(err)
					}
					if !rd.NotModified || rd.Waited != tt.waited {
						t.Fatalf("read %+v, want a 304 with Waited %v", rd, tt.waited)
					}
				}
			})
		})
	}
}

var errNotCut = errors.New("not a cut")
