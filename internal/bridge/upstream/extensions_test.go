package upstream

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
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

// TestReadsGetDetail_X3: a real durable agent sends a question's detail,
// the whole text a yes would run, to the bridge's reads, which announce
// the extension; the bridge keeps it, cleaned, with the card's mark.
func TestReadsGetDetail_X3(t *testing.T) {
	whole := strings.Repeat("echo filler-line\n", 6000) + "echo \u202ehidden-tail >> MARK"
	snap := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "S", Tabs: []wire.Tab{{ID: "t", Title: "T",
		Conversations: []wire.Conversation{{ID: "c", Title: "C", Questions: []wire.Question{{ID: "q1", Kind: wire.AskYesNo, Title: "Run it?", Revision: 1, Detail: whole}}}}}}}}}
	c := NewSocket(startAgent(t, t.TempDir(), snap), os.Getuid())
	defer c.Close()
	rd, err := c.Snapshot(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	q := rd.Snapshot.Spaces[0].Tabs[0].Conversations[0].Questions[0]
	if q.Detail != strings.ReplaceAll(whole, "\u202e", "") || !q.Shortened {
		t.Fatalf("detail %d bytes of %d, shortened %v", len(q.Detail), len(whole), q.Shortened)
	}
}
