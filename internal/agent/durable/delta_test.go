package durable

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

const deltaToken = "0123456789abcdef0123456789abcdef-delta"

func deltaSnap(items int, aa bool) *wire.Snapshot {
	c := wire.Conversation{ID: "c", Title: "Work", Questions: []wire.Question{{ID: "q", Kind: wire.AskYesNo, Title: "Run?", Revision: 1, AllowAlways: aa, Detail: "rm -rf build"}}}
	for i := range items {
		c.Items = append(c.Items, wire.Item{ID: fmt.Sprint("i", i), Kind: wire.KindText, Text: strings.Repeat("output line ", 20)})
	}
	return &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "S", Tabs: []wire.Tab{{ID: "t", Title: "T", Conversations: []wire.Conversation{c}}}}}}
}

// read sends one snapshot read to h with the given headers.
func read(t *testing.T, h http.Handler, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, wire.SnapshotPath, nil)
	req.Header.Set("Authorization", "Bearer "+deltaToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestDelta_K7_BothTransports: on the local socket and on the token
// transport, a read that takes deltas and names a recent snapshot gets a
// delta, marked, that turns the bridge's state into exactly the whole
// snapshot's (always-allow offers left out on the token transport, details
// only when announced); a read without the extension, with an unknown or
// several ETags, gets the whole snapshot, unmarked; a waiting read gets
// the delta too.
func TestDelta_K7_BothTransports(t *testing.T) {
	for _, tr := range []struct {
		name string
		t    Transport
	}{{"socket", Transport{Unchecked: true}}, {"token", Transport{Remote: true, Tokens: Tokens{Current: deltaToken}}}} {
		for _, ext := range []string{wire.ExtDelta, wire.ExtDelta + ", " + wire.ExtDetail} {
			t.Run(tr.name+"/"+ext, func(t *testing.T) {
				srv, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err != nil {
					t.Fatal(err)
				}
				h := srv.handler(tr.t)
				srv.SetSnapshot(deltaSnap(200, true))
				first := read(t, h, map[string]string{wire.ExtensionsHeader: ext})
				base := first.Header().Get("ETag")
				s0, rep, err := wire.ParseSnapshot(first.Body.Bytes())
				if err != nil {
					t.Fatal(err)
				}
				st := wire.NewState(s0, rep)

				next := deltaSnap(201, true)
				next.Spaces[0].Tabs[0].Conversations[0].Items[200].Text = "the new line"
				srv.SetSnapshot(next)
				whole := read(t, h, map[string]string{wire.ExtensionsHeader: ext})
				for _, waiting := range []bool{false, true} {
					hdr := map[string]string{wire.ExtensionsHeader: ext, "If-None-Match": base}
					if waiting {
						hdr[wire.WaitHeader] = "30"
					}
					got := read(t, h, hdr)
					if got.Code != http.StatusOK || got.Header().Get(wire.DeltaHeader) != base || got.Header().Get("ETag") != whole.Header().Get("ETag") {
						t.Fatalf("waiting %v: got %d, %s %q, ETag %q; want a delta from %q", waiting, got.Code, wire.DeltaHeader, got.Header().Get(wire.DeltaHeader), got.Header().Get("ETag"), base)
					}
					if got.Body.Len() > 1024 {
						t.Fatalf("the delta is %d bytes for one line", got.Body.Len())
					}
					d, err := wire.ParseDelta(got.Body.Bytes())
					if err != nil {
						t.Fatal(err)
					}
					ns, _, err := st.Apply(d)
					if err != nil {
						t.Fatal(err)
					}
					ws, _, err := wire.ParseSnapshot(whole.Body.Bytes())
					if err != nil {
						t.Fatal(err)
					}
					if g, w := mustJSON(t, ns.Snap), mustJSON(t, ws); !bytes.Equal(g, w) {
						t.Fatalf("the delta's state differs from the whole snapshot:\n got %.300s\nwant %.300s", g, w)
					}
				}
				for name, hdr := range map[string]map[string]string{
					"no extension":  {"If-None-Match": base},
					"unknown ETag":  {wire.ExtensionsHeader: ext, "If-None-Match": `"nope"`},
					"several ETags": {wire.ExtensionsHeader: ext, "If-None-Match": base + `, "x"`},
				} {
					got := read(t, h, hdr)
					if got.Code != http.StatusOK || got.Header().Get(wire.DeltaHeader) != "" {
						t.Fatalf("%s: got %d with %s %q; want the whole snapshot", name, got.Code, wire.DeltaHeader, got.Header().Get(wire.DeltaHeader))
					}
				}
			})
		}
	}
}

// TestDelta_WholeWhenADeltaCannotSayIt: a new conversation, or a change as
// large as the snapshot, goes whole.
func TestDelta_WholeWhenADeltaCannotSayIt(t *testing.T) {
	srv, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	h := srv.handler(Transport{Unchecked: true})
	for name, change := range map[string]func(*wire.Snapshot){
		"new conversation": func(s *wire.Snapshot) {
			tb := &s.Spaces[0].Tabs[0]
			tb.Conversations = append(tb.Conversations, wire.Conversation{ID: "c2"})
		},
		"everything changed": func(s *wire.Snapshot) {
			for i := range s.Spaces[0].Tabs[0].Conversations[0].Items {
				s.Spaces[0].Tabs[0].Conversations[0].Items[i].Text = "new"
			}
		},
	} {
		srv.SetSnapshot(deltaSnap(50, false))
		base := read(t, h, map[string]string{wire.ExtensionsHeader: wire.ExtDelta}).Header().Get("ETag")
		s := deltaSnap(50, false)
		change(s)
		srv.SetSnapshot(s)
		got := read(t, h, map[string]string{wire.ExtensionsHeader: wire.ExtDelta, "If-None-Match": base})
		if got.Code != http.StatusOK || got.Header().Get(wire.DeltaHeader) != "" {
			t.Fatalf("%s: got %d with %s %q; want the whole snapshot", name, got.Code, wire.DeltaHeader, got.Header().Get(wire.DeltaHeader))
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
