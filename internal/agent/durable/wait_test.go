package durable_test

import (
	"context"
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

const waitToken = "0123456789abcdef0123456789abcdef-wait"

// waitReply is what one read got and when.
type waitReply struct {
	status int
	etag   string
	waited string // the Collie-Waited header
	after  time.Duration
	err    error
}

// TestWaitingRead runs the snapshot route's waiting read on
// synctest's clock, over an in-memory connection, with the server's real
// 30 s timeouts: a read is held until the board changes (answered at that
// very instant) or its wait ends (304 at exactly the wait, past both
// timeouts); every answer to a read that asked to wait is marked; a read
// that did not ask, or asked in a malformed way, is answered at once and
// unmarked, as before. Both transports: the local socket and the token
// transport (K3, K7).
func TestWaitingRead(t *testing.T) {
	tests := []struct {
		name   string
		remote bool
		wait   string // Collie-Wait; "" sends none
		etag   string // "cur" sends the current ETag, "" none, else as is
		change time.Duration
		noop   bool // the change is a Changed() that leaves the ETag as it is
		stop   time.Duration
		token  string
		// what comes back
		status int
		after  time.Duration
		waited string
	}{
		{name: "K7_no_wait_304_at_once", etag: "cur", status: 304},
		{name: "held_until_change", wait: "60", etag: "cur", change: 20 * time.Second, status: 200, after: 20 * time.Second, waited: "60"},
		{name: "304_at_wait_end_past_server_timeouts", wait: "45", etag: "cur", status: 304, after: 45 * time.Second, waited: "45"},
		{name: "wait_capped_at_60", wait: "300", etag: "cur", status: 304, after: 60 * time.Second, waited: "60"},
		{name: "stale_etag_at_once", wait: "60", etag: `"old"`, status: 200, waited: "60"},
		{name: "no_etag_at_once", wait: "60", status: 200, waited: "60"},
		{name: "change_keeping_etag_still_held", wait: "30", etag: "cur", change: 5 * time.Second, noop: true, status: 304, after: 30 * time.Second, waited: "30"},
		{name: "malformed_wait_0", wait: "0", etag: "cur", status: 304},
		{name: "malformed_wait_fraction", wait: "1.5", etag: "cur", status: 304},
		{name: "agent_stops_304_unmarked", wait: "60", etag: "cur", stop: 7 * time.Second, status: 304, after: 7 * time.Second},
		{name: "K3_token_transport_held_until_change", remote: true, token: waitToken, wait: "60", etag: "cur", change: 12 * time.Second, status: 200, after: 12 * time.Second, waited: "60"},
		{name: "K3_token_transport_304_at_wait_end", remote: true, token: waitToken, wait: "50", etag: "cur", status: 304, after: 50 * time.Second, waited: "50"},
		{name: "K3_wrong_token_refused_at_once", remote: true, token: waitToken + "x", wait: "60", etag: "cur", status: 401},
	}
	for _, tt := range tests {
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
				tr := durable.Transport{Unchecked: true}
				if tt.remote {
					tr = durable.Transport{Remote: true, Tokens: durable.Tokens{Current: waitToken}}
				}
				ctx, cancel := context.WithCancel(t.Context())
				served := make(chan error, 1)
				go func() { served <- s.ServeTransport(ctx, l, tr) }()
				ht := &http.Transport{DialContext: l.DialContext}
				defer func() {
					ht.CloseIdleConnections()
					cancel()
					if err := <-served; err != nil {
						t.Error(err)
					}
				}()
				hc := &http.Client{Transport: ht}
				get := func(etag, wait, token string) waitReply {
					start := time.Now()
					req, _ := http.NewRequest(http.MethodGet, "http://agent"+wire.SnapshotPath, nil)
					req.Header.Set(wire.VersionHeader, "1")
					if etag != "" {
						req.Header.Set("If-None-Match", etag)
					}
					if wait != "" {
						req.Header.Set(wire.WaitHeader, wait)
					}
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					resp, err := hc.Do(req)
					if err != nil {
						return waitReply{err: err, after: time.Since(start)}
					}
					resp.Body.Close()
					return waitReply{status: resp.StatusCode, etag: resp.Header.Get("ETag"), waited: resp.Header.Get(wire.WaitedHeader), after: time.Since(start)}
				}
				first := get("", "", waitToken)
				if first.err != nil || first.etag == "" {
					t.Fatalf("first read: %+v", first)
				}
				etag := tt.etag
				if etag == "cur" {
					etag = first.etag
				}
				done := make(chan waitReply, 1)
				go func() { done <- get(etag, tt.wait, tt.token) }()
				synctest.Wait()
				at := time.Duration(0)
				for _, ev := range []struct {
					when time.Duration
					do   func()
				}{
					{tt.change, func() {
						if tt.noop {
							s.Changed()
						} else if _, err := b.AppendItem("main", wire.Item{Kind: wire.KindText, Role: "agent", Text: "news"}); err != nil {
							t.Error(err)
						}
					}},
					{tt.stop, cancel},
				} {
					if ev.when == 0 {
						continue
					}
					time.Sleep(ev.when - at)
					at = ev.when
					synctest.Wait()
					select {
					case r := <-done:
						t.Fatalf("the read ended after %v, before the event at %v: %+v", r.after, ev.when, r)
					default:
					}
					ev.do()
				}
				r := <-done
				if r.err != nil {
					t.Fatalf("read: %v", r.err)
				}
				if r.status != tt.status || r.after != tt.after || r.waited != tt.waited {
					t.Fatalf("got %d after %v marked %q; want %d after %v marked %q", r.status, r.after, r.waited, tt.status, tt.after, tt.waited)
				}
				if r.status == 200 && etag != "" && r.etag == etag {
					t.Fatalf("a 200 with the ETag asked about: %q", r.etag)
				}
			})
		})
	}
}
