package upstream

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/collie-linux/collie/internal/wire"
)

// TestReadsAnnouncePush_D4: every read says the bridge takes a question's
// push wording (Collie-Extensions: push), so an agent sends it only to a
// bridge that will not refuse the snapshot for an unknown field.
func TestReadsAnnouncePush_D4(t *testing.T) {
	got := make(chan string, 2)
	path := serveRaw(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(wire.ExtensionsHeader)
		w.Header().Set(wire.VersionHeader, "1")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"spaces":[]}`))
	}))
	c := NewSocket(path, os.Getuid())
	defer c.Close()
	if _, err := c.Snapshot(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if h := <-got; !wire.HasExtension(h, wire.ExtPush) || !wire.HasExtension(h, wire.ExtDetail) {
		t.Fatalf("%s: %q, want it to name %q", wire.ExtensionsHeader, h, wire.ExtPush)
	}
}
