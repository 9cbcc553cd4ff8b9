package upstream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestHostedReads_X1: an agent hosted in the bridge's process
// is read through the same client code as one on a socket: its hello and
// snapshot cleaned (X1), 304 on an unchanged ETag, a waiting read held
// until the snapshot changes, a write refused as the agent refuses it.
func TestHostedReads_X1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := durable.NewServer(wire.Hello{Agent: "agent\u202e"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.SetSnapshot(demo); err != nil {
			t.Fatal(err)
		}
		c := NewHosted(srv.Hosted())
		ctx := context.Background()
		h, err := c.Hello(ctx)
		if err != nil || h.Agent != "agent" {
			t.Fatalf("hello = %+v, %v; want it cleaned (X1)", h, err)
		}
		rd, err := c.Snapshot(ctx, "")
		if err != nil || rd.NotModified || rd.ETag == "" || rd.Snapshot.Spaces[0].Title != "Space" {
			t.Fatalf("first read = %+v, %v", rd, err)
		}
		if rd2, err := c.Snapshot(ctx, rd.ETag); err != nil || !rd2.NotModified {
			t.Fatalf("unchanged read = %+v, %v; want 304", rd2, err)
		}
		// A waiting read is held until the snapshot changes.
		got := make(chan Read, 1)
		start := time.Now()
		go func() {
			r, err := c.SnapshotWait(ctx, rd.ETag, 30*time.Second)
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		time.Sleep(5 * time.Second) // the bubble's clock: the read is held meanwhile
		synctest.Wait()
		select {
		case r := <-got:
			t.Fatalf("the waiting read answered before any change: %+v", r)
		default:
		}
		changed := *demo
		changed.Spaces = []wire.Space{{ID: "s", Title: "Renamed", Tabs: demo.Spaces[0].Tabs}}
		if err := srv.SetSnapshot(&changed); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if !r.Waited || r.Snapshot == nil || r.Snapshot.Spaces[0].Title != "Renamed" || time.Since(start) != 5*time.Second {
			t.Fatalf("held read = %+v after %v; want the new snapshot at the change", r, time.Since(start))
		}
		// A write to an agent with no app is refused as the agent says.
		_, err = c.Write(ctx, wire.SendPath, &wire.SendRequest{Header: wire.Header{RequestID: "r1"}, Conversation: "c", Text: "hi"})
		var ref *Refused
		if !errors.As(err, &ref) || ref.Status == http.StatusOK {
			t.Fatalf("write to an agent without an app = %v, want its refusal", err)
		}
		// A read whose context ends stops.
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { _, err := c.SnapshotWait(cctx, r.ETag, 30*time.Second); done <- err }()
		synctest.Wait()
		cancel()
		if err := <-done; err == nil {
			t.Fatal("a cancelled waiting read returned no error")
		}
	})
}
