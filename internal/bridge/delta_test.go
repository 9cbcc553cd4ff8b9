package bridge

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// serveStreamer serves a durable agent's reads at sock, counting what it
// writes; old makes it an agent without snapshot deltas.
func serveStreamer(t *testing.T, sock string, old bool, items []wire.Item) (*durable.Server, *atomic.Int64) {
	t.Helper()
	srv, err := durable.NewServer(wire.Hello{Agent: "streamer"}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(streamingSnapshot(items))
	l, _, err := durable.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Hosted() // reads only: no caller check needed
	if old {
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set(wire.ExtensionsHeader, wire.ExtPush+", "+wire.ExtDetail)
			inner.ServeHTTP(w, r)
		})
	}
	var wrote atomic.Int64
	hs := &http.Server{Handler: h}
	go hs.Serve(&writeCounter{Listener: l, n: &wrote})
	t.Cleanup(func() { hs.Close() })
	return srv, &wrote
}

// TestBridge_X5_DeltasGiveWhatWholeReadsGive: two agents stream the same
// conversation, one with snapshot deltas and one without; after every
// change the bridge shows both exactly alike, the one by deltas for a few
// hundred bytes a change and the other for its whole snapshot.
func TestBridge_X5_DeltasGiveWhatWholeReadsGive(t *testing.T) {
	dir, err := os.MkdirTemp("", "cd") // short: socket paths fit sun_path
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	items := transcript(200 << 10)
	deltaSock, oldSock := filepath.Join(dir, "d", "desk", "s.sock"), filepath.Join(dir, "o", "desk", "s.sock")
	dsrv, dwrote := serveStreamer(t, deltaSock, false, items)
	osrv, owrote := serveStreamer(t, oldSock, true, items)
	changed := make(chan struct{}, 1)
	_, b := startWith(t, func(o *Options) {
		o.Changed = func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}, sources.Source{Name: "deltas", Socket: deltaSock}, sources.Source{Name: "old", Socket: oldSock})
	show := func(want int) (string, string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			v := b.View()
			if len(v) == 2 && v[0].Snapshot != nil && v[1].Snapshot != nil &&
				len(v[0].Snapshot.Spaces[0].Tabs[0].Conversations[0].Items) == want && len(v[1].Snapshot.Spaces[0].Tabs[0].Conversations[0].Items) == want {
				d, _ := json.Marshal(v[0].Snapshot)
				o, _ := json.Marshal(v[1].Snapshot)
				return string(d), string(o)
			}
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("the bridge never showed %d items on both agents", want)
			}
		}
	}
	show(len(items))
	d0, o0 := dwrote.Load(), owrote.Load()
	const changes = 15
	for i := range changes {
		items = append(items, streamItem(len(items)))
		if i%4 == 3 {
			items[len(items)-2].Text += " (edited \u202e)"
		}
		dsrv.SetSnapshot(streamingSnapshot(items))
		osrv.SetSnapshot(streamingSnapshot(items))
		if d, o := show(len(items)); d != o {
			t.Fatalf("change %d: the agent read by deltas shows\n%.300s\nthe one read whole\n%.300s", i, d, o)
		}
	}
	perDelta, perWhole := (dwrote.Load()-d0)/changes, (owrote.Load()-o0)/changes
	t.Logf("bytes read per change: %d by deltas, %d whole", perDelta, perWhole)
	if perDelta > 16<<10 || perDelta*20 > perWhole {
		t.Fatalf("a change cost %d bytes by deltas and %d whole", perDelta, perWhole)
	}
}
