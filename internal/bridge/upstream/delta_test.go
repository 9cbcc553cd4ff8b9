package upstream

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// streamSnap is a conversation of n tool outputs, the last still running.
func streamSnap(n int) *wire.Snapshot {
	c := wire.Conversation{ID: "c", Title: "Build"}
	for i := range n {
		c.Items = append(c.Items, wire.Item{ID: fmt.Sprint("i", i), Kind: wire.KindToolCall,
			Tool: &wire.ToolCall{Name: "make", Output: strings.Repeat("compiling \u202e pkg\n", 12), Status: "done"}})
	}
	c.Items[n-1].Tool.Status = "running"
	return &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Desk", Tabs: []wire.Tab{{ID: "t", Title: "Main", Conversations: []wire.Conversation{c, {ID: "d", Title: "Other"}}}}}}}
}

// deltaAgent serves a real durable agent on the transport named, through
// front when set, and returns a client for it and the agent's bytes
// counter.
func deltaAgent(t *testing.T, transport string, front func(http.Handler) http.Handler) (*durable.Server, func() Waiter, *countingListener) {
	t.Helper()
	srv, err := durable.NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(streamSnap(300))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	switch transport {
	case "socket":
		path := filepath.Join(t.TempDir(), "desk", "a.sock")
		l, err := privsock.Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		cl := &countingListener{Listener: l}
		h := srv.Hosted() // the socket's routes, without the caller check (reads only here)
		if front != nil {
			h = front(h)
		}
		hs := &http.Server{Handler: h}
		go func() { hs.Serve(cl); close(done) }()
		go func() { <-ctx.Done(); hs.Close() }()
		return srv, func() Waiter { return NewSocket(path, os.Getuid()) }, cl
	default: // the token transport, over real TLS
		ca := tlstest.NewCA(t, t.TempDir())
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		cl := &countingListener{Listener: l}
		tl := tls.NewListener(cl, &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, "localhost")}})
		if front != nil {
			t.Fatal("front is for the socket")
		}
		go func() {
			srv.ServeTransport(ctx, tl, durable.Transport{Remote: true, Tokens: durable.Tokens{Current: oldToken}})
			close(done)
		}()
		url := fmt.Sprintf("https://localhost:%d", l.Addr().(*net.TCPAddr).Port)
		return srv, func() Waiter {
			c, err := NewHTTPS(url, oldToken, HTTPSOptions{CAFile: ca.File})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, cl
	}
}

func stateJSON(t *testing.T, s *wire.Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDelta_K7_StreamingAgent: over the socket and over HTTPS, a reader
// that holds a snapshot gets each change of a streaming agent as a delta,
// a few hundred bytes on the wire, and its state is exactly what a whole
// read gives, cleaned; waiting reads too.
func TestDelta_K7_StreamingAgent(t *testing.T) {
	for _, transport := range []string{"socket", "https"} {
		t.Run(transport, func(t *testing.T) {
			srv, client, bytes := deltaAgent(t, transport, nil)
			c, fresh := client(), client()
			defer c.Close()
			defer fresh.Close()
			ctx := context.Background()
			rd, err := c.SnapshotWait(ctx, "", 0)
			if err != nil || rd.Delta {
				t.Fatalf("first read: %+v, %v; want the whole snapshot", rd, err)
			}
			raw := streamSnap(300)
			for step := range 12 {
				items := &raw.Spaces[0].Tabs[0].Conversations[0].Items
				last := &(*items)[len(*items)-1]
				if step%3 == 2 {
					last.Tool.Status = "done"
					*items = append(*items, wire.Item{ID: fmt.Sprint("n", step), Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "make", Status: "running"}})
				} else {
					last.Tool.Output += "more output\n"
				}
				srv.SetSnapshot(raw)
				before := bytes.total()
				if step%2 == 0 {
					rd, err = c.SnapshotWait(ctx, rd.ETag, 0)
				} else {
					rd, err = c.SnapshotWait(ctx, rd.ETag, 30e9) // a waiting read, answered at once: the ETag is stale
				}
				wire := bytes.total() - before
				if err != nil || !rd.Delta || rd.NotModified {
					t.Fatalf("step %d: %+v, %v; want a delta", step, rd, err)
				}
				// The budget per change is 16 KiB; over HTTPS it also
				// carries a new connection's TLS handshake when the kept
				// one was closed (about 5 KiB of certificates).
				if wire > 16<<10 {
					t.Fatalf("step %d: the read carried %d bytes for one change", step, wire)
				}
				whole, err := fresh.SnapshotWait(ctx, "", 0)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := stateJSON(t, rd.Snapshot), stateJSON(t, whole.Snapshot); g != w || rd.ETag != whole.ETag {
					t.Fatalf("step %d: the delta's state differs from a whole read's", step)
				}
			}
		})
	}
}

// TestDelta_OldAgentWithoutTheExtension: an agent that ignores the
// extension answers whole every time, and the reader reads it as before.
func TestDelta_OldAgentWithoutTheExtension(t *testing.T) {
	old := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set(wire.ExtensionsHeader, wire.ExtPush+", "+wire.ExtDetail) // it knows no deltas
			h.ServeHTTP(w, r)
		})
	}
	srv, client, _ := deltaAgent(t, "socket", old)
	c := client()
	defer c.Close()
	ctx := context.Background()
	rd, err := c.SnapshotWait(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := streamSnap(301)
	srv.SetSnapshot(raw)
	rd, err = c.SnapshotWait(ctx, rd.ETag, 0)
	if err != nil || rd.Delta || len(rd.Snapshot.Spaces[0].Tabs[0].Conversations[0].Items) != 301 {
		t.Fatalf("%+v, %v; want the whole new snapshot", rd, err)
	}
}

// TestDelta_X4_RefusedDeltaReadsWhole: a delta that does not apply (from
// another snapshot than the one held, broken, or naming what the state
// does not have) is refused; the same read then reads the whole snapshot,
// says why in its report, and the state is right.
func TestDelta_X4_RefusedDeltaReadsWhole(t *testing.T) {
	for name, bad := range map[string]struct{ base, body string }{
		"other base":           {`"not-it"`, `{}`},
		"broken":               {"", `{"conversations":[{"id":"c","itemz":[]}]}`},
		"unknown conversation": {"", `{"conversations":[{"id":"nope","title":"x"}]}`},
	} {
		t.Run(name, func(t *testing.T) {
			lie := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if !wire.HasExtension(r.Header.Get(wire.ExtensionsHeader), wire.ExtDelta) {
						h.ServeHTTP(w, r)
						return
					}
					base := bad.base
					if base == "" {
						base = r.Header.Get("If-None-Match")
					}
					w.Header().Set(wire.DeltaHeader, base)
					w.Header().Set("ETag", `"lie"`)
					w.Write([]byte(bad.body))
				})
			}
			srv, client, _ := deltaAgent(t, "socket", lie)
			c := client()
			defer c.Close()
			ctx := context.Background()
			rd, err := c.SnapshotWait(ctx, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			srv.SetSnapshot(streamSnap(301))
			rd, err = c.SnapshotWait(ctx, rd.ETag, 0)
			if err != nil || rd.Delta || len(rd.Snapshot.Spaces[0].Tabs[0].Conversations[0].Items) != 301 {
				t.Fatalf("%+v, %v; want the whole snapshot read after the refusal", rd, err)
			}
			if len(rd.Report.Dropped) == 0 || !strings.Contains(rd.Report.Dropped[0].Reason, "refused") {
				t.Fatalf("the report does not say the delta was refused: %+v", rd.Report)
			}
		})
	}
}

// TestDelta_ConcurrentReads: a read beside a delta read (collie durable
// list checks an agent held in a waiting read) asks for the whole snapshot,
// and snapshots already handed out never change while later deltas append
// to the newest one in place (run with -race).
func TestDelta_ConcurrentReads(t *testing.T) {
	srv, client, _ := deltaAgent(t, "socket", nil)
	c := client()
	defer c.Close()
	ctx := context.Background()
	rd, err := c.SnapshotWait(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := streamSnap(300)
	handed := make(chan *wire.Snapshot, 64)
	encoded := make(chan struct{})
	go func() { // a device encoding what it was handed, while reads go on
		defer close(encoded)
		for s := range handed {
			before := stateJSON(t, s)
			if after := stateJSON(t, s); before != after {
				t.Error("a snapshot handed out changed")
			}
		}
	}()
	for step := range 30 {
		items := &raw.Spaces[0].Tabs[0].Conversations[0].Items
		*items = append(*items, wire.Item{ID: fmt.Sprint("n", step), Kind: wire.KindText, Text: "line"})
		srv.SetSnapshot(raw)
		side := make(chan Read, 1)
		etag := rd.ETag
		go func() { r, _ := c.SnapshotWait(ctx, etag, 0); side <- r }()
		rd, err = c.SnapshotWait(ctx, etag, 0)
		if err != nil {
			t.Fatal(err)
		}
		other := <-side
		for _, r := range []Read{rd, other} {
			if r.Snapshot != nil {
				if n := len(r.Snapshot.Spaces[0].Tabs[0].Conversations[0].Items); n != 301+step {
					t.Fatalf("step %d: %d items; want %d", step, n, 301+step)
				}
				handed <- r.Snapshot
			}
		}
	}
	close(handed)
	<-encoded
}
