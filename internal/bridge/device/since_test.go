package device

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Reads of a conversation since a revision (devices get deltas): a device
// that applies each delta holds exactly what a whole read gives, over
// seeded random changes made by snapshot deltas (lists shared with the
// state before) and by whole reads (nothing shared); a base the bridge no
// longer holds, of another run, or malformed reads whole.

// streamGen makes an agent's cleaned states, as the bridge holds them.
type streamGen struct {
	r    *rand.Rand
	next int
	st   *wire.State
}

func (g *streamGen) id(p string) string { g.next++; return fmt.Sprint(p, g.next) }

func (g *streamGen) item() wire.Item {
	if g.r.IntN(4) == 0 {
		return wire.Item{ID: g.id("t"), Kind: wire.KindToolCall, Tool: &wire.ToolCall{Name: "make", Status: "running", Output: strings.Repeat("out ", g.r.IntN(40))}}
	}
	return wire.Item{ID: g.id("i"), Kind: wire.KindText, Role: "agent", Text: fmt.Sprint("line ", g.next, strings.Repeat(" text", g.r.IntN(60)))}
}

// start makes the first state: conversations c1, of at least n items,
// and c2.
func (g *streamGen) start(n int) {
	s := &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "S", Tabs: []wire.Tab{{ID: "t", Title: "T"}}}}}
	for i, id := range []string{"c1", "c2"} {
		c := wire.Conversation{ID: id, Title: "Chat " + id}
		for range 5 + g.r.IntN(30) + n*(1-i) {
			c.Items = append(c.Items, g.item())
		}
		s.Spaces[0].Tabs[0].Conversations = append(s.Spaces[0].Tabs[0].Conversations, c)
	}
	g.st = wire.NewState(s, wire.Report{})
}

// change makes one change to a conversation: a snapshot delta applied to
// the state, or (whole) the same change in a fresh copy, as a whole read
// makes it.
func (g *streamGen) change(t *testing.T, whole bool) {
	t.Helper()
	cs := g.st.Snap.Spaces[0].Tabs[0].Conversations
	c := cs[g.r.IntN(len(cs))]
	cd := wire.ConversationDelta{ID: c.ID}
	switch k := g.r.IntN(10); {
	case k < 5 || len(c.Items) < 3: // the stream: new items at the end
		for range 1 + g.r.IntN(2) {
			cd.Items = append(cd.Items, g.item())
		}
	case k == 5: // the last item grows (a tool's output streams)
		it := c.Items[len(c.Items)-1]
		it.Text += " more"
		if it.Tool != nil {
			tool := *it.Tool
			tool.Output += "\nmore output"
			it.Tool = &tool
		}
		cd.Items = []wire.Item{it}
	case k == 6: // an item goes
		cd.RemoveItems = []string{c.Items[g.r.IntN(len(c.Items))].ID}
	case k == 7: // an item moves to the end
		it := c.Items[g.r.IntN(len(c.Items)-1)]
		cd.RemoveItems, cd.Items = []string{it.ID}, []wire.Item{it}
	case k == 8: // a question comes or goes
		if len(c.Questions) > 0 && g.r.IntN(2) == 0 {
			cd.RemoveQuestions = []string{c.Questions[0].ID}
		} else {
			cd.Questions = []wire.Question{{ID: g.id("q"), Kind: wire.AskYesNo, Title: "Go on?", Revision: 1}}
		}
	default: // the title, closed
		title, closed := fmt.Sprint("Chat ", g.next), !c.Closed
		cd.Title, cd.Closed = &title, &closed
		g.next++
	}
	ns, _, err := g.st.Apply(&wire.Delta{Conversations: []wire.ConversationDelta{cd}})
	if err != nil {
		t.Fatalf("apply %+v: %v", cd, err)
	}
	if whole {
		raw, _ := json.Marshal(ns.Snap)
		s, rep, err := wire.ParseSnapshot(raw)
		if err != nil {
			t.Fatal(err)
		}
		ns = wire.NewState(s, rep)
	}
	g.st = ns
}

func (g *streamGen) view() []view.Agent {
	return []view.Agent{{AgentStatus: view.AgentStatus{Name: "demo", Reachable: true}, Snapshot: g.st.Snap, Lineage: g.st.Lineage}}
}

// held is what a device holds of a conversation.
type held struct {
	etag string
	rev  int64
	conv wire.Conversation
}

// readSince reads conversation id since h (whole when h is nil) and
// returns what the device then holds, whether the reply was a delta, and
// its size.
func readSince(t *testing.T, f *fixture, id string, h *held) (held, bool, int) {
	t.Helper()
	path := "/api/v1/agents/demo/conversations/" + id
	if h != nil {
		path += "?since=" + url.QueryEscape(h.etag)
	}
	status, hdr, body := f.get(t, path, "")
	var cr ConversationReply
	if err := json.Unmarshal([]byte(body), &cr); status != 200 || err != nil {
		t.Fatalf("GET %s: %d %v %s", path, status, err, body)
	}
	out := held{etag: hdr.Get("ETag"), rev: cr.Rev}
	switch {
	case cr.Delta != nil:
		if h == nil || cr.Since != h.rev || hdr.Get(wire.DeltaHeader) != h.etag || cr.Conversation != nil {
			t.Fatalf("GET %s: a delta since %d (%q), holding %+v: %s", path, cr.Since, hdr.Get(wire.DeltaHeader), h, body)
		}
		out.conv = applyDelta(t, h.conv, cr.Delta)
		return out, true, len(body)
	case cr.Conversation != nil:
		if cr.Since != 0 || hdr.Get(wire.DeltaHeader) != "" {
			t.Fatalf("GET %s: a whole conversation marked as a delta: %s", path, body)
		}
		out.conv = *cr.Conversation
		return out, false, len(body)
	}
	t.Fatalf("GET %s: neither a conversation nor a delta: %s", path, body)
	return out, false, 0
}

// applyDelta applies a delta to what a device holds, as the protocol's
// one applier does.
func applyDelta(t *testing.T, c wire.Conversation, d *wire.ConversationDelta) wire.Conversation {
	t.Helper()
	st := wire.NewState(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Tabs: []wire.Tab{{ID: "t", Conversations: []wire.Conversation{c}}}}}}, wire.Report{})
	ns, _, err := st.Apply(&wire.Delta{Conversations: []wire.ConversationDelta{*d}})
	if err != nil {
		t.Fatalf("apply the device's delta %+v: %v", d, err)
	}
	return ns.Snap.Spaces[0].Tabs[0].Conversations[0]
}

func sameConv(a, b wire.Conversation) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestConversationSince_AppliedDeltasEqualWholeReads(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			f := newFixture(t)
			g := &streamGen{r: rand.New(rand.NewPCG(seed, 3))}
			g.start(0)
			f.setView(g.view())
			dev := map[string]*held{}
			for _, id := range []string{"c1", "c2"} {
				h, _, _ := readSince(t, f, id, nil)
				dev[id] = &h
			}
			deltas, reads := 0, 0
			for step := range 80 {
				// Up to a few changes between two reads of the device; now
				// and then more than the bridge keeps.
				n := 1 + g.r.IntN(2)
				if g.r.IntN(15) == 0 {
					n = keptVersions + 2
				}
				for range n {
					g.change(t, g.r.IntN(6) == 0)
					f.setView(g.view())
					f.get(t, "/api/v1/agents", "") // the bridge sees each state, as the feed does
				}
				for _, id := range []string{"c1", "c2"} {
					got, delta, size := readSince(t, f, id, dev[id])
					whole, _, wsize := readSince(t, f, id, nil)
					if got.etag != whole.etag || got.rev != whole.rev || !sameConv(got.conv, whole.conv) {
						t.Fatalf("step %d, %s: the device holds\n%+v (%s)\nthe whole read gives\n%+v (%s)", step, id, got.conv, got.etag, whole.conv, whole.etag)
					}
					if delta && size >= wsize {
						t.Fatalf("step %d, %s: a delta of %d bytes for a conversation of %d", step, id, size, wsize)
					}
					reads++
					if delta {
						deltas++
					}
					dev[id] = &got
				}
			}
			t.Logf("%d of %d reads since a revision came as deltas", deltas, reads)
			if deltas < reads/2 {
				t.Fatalf("only %d of %d reads since a revision came as deltas", deltas, reads)
			}
		})
	}
}

// TestConversationSince_ReadsWhole: a base the bridge does not hold, of
// another run of the bridge, or not an ETag at all reads whole; a base
// that is the current revision reads an empty delta.
func TestConversationSince_ReadsWhole(t *testing.T) {
	f := newFixture(t)
	g := &streamGen{r: rand.New(rand.NewPCG(1, 2))}
	g.start(0)
	f.setView(g.view())
	first, _, _ := readSince(t, f, "c1", nil)
	ep, _, _ := strings.Cut(strings.Trim(first.etag, `"`), ".")
	for _, since := range []string{"", "x", `"`, `""`, "W/", ep, ep + ".", ep + ".0", ep + ".-1", ep + ".+1", ep + ".99", "other." + fmt.Sprint(first.rev),
		ep + "." + fmt.Sprint(first.rev) + ".1", ep + ".1e3", strings.Repeat("9", 40)} {
		h := first
		h.etag = since
		if _, delta, _ := readSince(t, f, "c1", &h); delta {
			t.Errorf("since %q: a delta; want the whole conversation", since)
		}
	}
	// Quoted, unquoted and weak forms of the tag held name the same base:
	// nothing changed since, an empty delta.
	for _, since := range []string{first.etag, strings.Trim(first.etag, `"`), "W/" + first.etag} {
		h := first
		h.etag = since
		status, _, body := f.get(t, "/api/v1/agents/demo/conversations/c1?since="+url.QueryEscape(since), "")
		if status != 200 || !strings.Contains(body, `"delta":{"id":"c1"}`) {
			t.Errorf("since %q, unchanged: %d %s", since, status, body)
		}
	}
	// With If-None-Match too, unchanged is 304, as for every read.
	if status, _, body := f.get(t, "/api/v1/agents/demo/conversations/c1?since="+url.QueryEscape(first.etag), first.etag); status != http.StatusNotModified || body != "" {
		t.Errorf("since and If-None-Match, unchanged: %d %s", status, body)
	}
	// Too old: more changes than the bridge keeps.
	for range keptVersions + 1 {
		g.change(t, false)
		f.setView(g.view())
		f.get(t, "/api/v1/agents", "")
	}
	if _, delta, _ := readSince(t, f, "c1", &first); delta {
		t.Error("a base older than the bridge keeps came as a delta")
	}
	// Kept for keptFor after a newer revision came, not longer.
	for _, wait := range []time.Duration{keptFor - time.Second, keptFor + time.Second} {
		base, _, _ := readSince(t, f, "c1", nil)
		ns, _, err := g.st.Apply(&wire.Delta{Conversations: []wire.ConversationDelta{{ID: "c1", Items: []wire.Item{g.item()}}}})
		if err != nil {
			t.Fatal(err)
		}
		g.st = ns
		f.setView(g.view())
		f.get(t, "/api/v1/agents", "")
		f.clock.add(wait)
		if _, delta, _ := readSince(t, f, "c1", &base); delta != (wait < keptFor) {
			t.Errorf("a base superseded %v ago: delta %v", wait, delta)
		}
	}
	// Without the credential: nothing, since or not.
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/agents/demo/conversations/c1?since="+url.QueryEscape(first.etag), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an unpaired read since: %d", resp.StatusCode)
	}
	// From another site's page: refused before the route, as every read.
	req, _ = http.NewRequest("GET", f.srv.URL+"/api/v1/agents/demo/conversations/c1?since="+url.QueryEscape(first.etag), nil)
	req.Header.Set("Authorization", "Bearer "+f.cred)
	req.Header.Set("Origin", "https://evil.invalid")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `"cross-site"`) || strings.Contains(string(body), "Chat") {
		t.Errorf("a read since from another site's page: %d %s", resp.StatusCode, body)
	}
}

// TestConversationSince_Kept: the tracker keeps a few of an agent's parts
// along snapshot deltas, one before a whole read, and the same content in
// a new snapshot takes the last one's place.
func TestConversationSince_Kept(t *testing.T) {
	g := &streamGen{r: rand.New(rand.NewPCG(5, 5))}
	g.start(0)
	tr := newTracker(g.view, "e")
	tr.current()
	count := func() int { tr.mu.Lock(); defer tr.mu.Unlock(); return len(tr.past["demo"]) }
	for i := range keptVersions + 3 {
		g.change(t, false)
		tr.current()
		if got, want := count(), min(i+2, keptVersions); got != want {
			t.Fatalf("after %d deltas the tracker keeps %d parts; want %d", i+1, got, want)
		}
	}
	g.change(t, true)
	tr.current()
	if got := count(); got != 2 {
		t.Fatalf("after a whole read the tracker keeps %d parts; want 2", got)
	}
	copied := *g.st.Snap // the same content, a new pointer
	g.st = wire.NewState(&copied, wire.Report{})
	tr.current()
	if got := count(); got != 2 {
		t.Fatalf("after the same content anew the tracker keeps %d parts; want 2", got)
	}
	// An agent that goes takes its parts along.
	v := g.view()
	g.st = nil
	tr.view = func() []view.Agent { return slices.Delete(v, 0, 1) }
	tr.current()
	if _, ok := tr.past["demo"]; ok {
		t.Fatal("the parts of an agent that went are kept")
	}
}

// FuzzSinceTag: a since parameter names a revision only when it is one of
// the tracker's ETags, spelled as the tracker spells it (quoted or not,
// weak or strong); anything else names none, and nothing panics.
func FuzzSinceTag(f *testing.F) {
	for _, s := range []string{`"ep.12"`, "ep.12", `W/"ep.12"`, "ep.012", "ep.+1", "ep.-1", "ep.0", "ep.", "ep", `"`, "", "other.3", "ep.1.2", "ep.9223372036854775808", "W/ep.12", `W/"ep.12`, `ep.12"`} {
		f.Add(s)
	}
	tr := newTracker(func() []view.Agent { return nil }, "ep")
	f.Fuzz(func(t *testing.T, tag string) {
		rev, ok := tr.parseTag(tag)
		if !ok {
			return
		}
		want := tr.etag(rev)
		if rev <= 0 || (tag != want && tag != strings.Trim(want, `"`) && tag != "W/"+want) {
			t.Fatalf("%q names revision %d, whose tag is %s", tag, rev, want)
		}
	})
}

// TestWorthDelta: a delta that carries every item and question, or
// removes more than it leaves out, is not smaller than the conversation.
func TestWorthDelta(t *testing.T) {
	items := func(ids ...string) []wire.Item {
		var out []wire.Item
		for _, id := range ids {
			out = append(out, wire.Item{ID: id, Kind: wire.KindText, Text: "x"})
		}
		return out
	}
	c := &wire.Conversation{ID: "c", Items: items("a", "b", "c"), Questions: []wire.Question{{ID: "q"}}}
	for _, tt := range []struct {
		name string
		d    wire.ConversationDelta
		want bool
	}{
		{"nothing changed", wire.ConversationDelta{ID: "c"}, true},
		{"one item", wire.ConversationDelta{ID: "c", Items: items("c")}, true},
		{"every item and question", wire.ConversationDelta{ID: "c", Items: items("a", "b", "c"), Questions: []wire.Question{{ID: "q"}}}, false},
		{"more removed than left out", wire.ConversationDelta{ID: "c", RemoveItems: []string{"x", "y", "z"}, Items: items("a", "b")}, false},
		{"as many removed as left out", wire.ConversationDelta{ID: "c", RemoveItems: []string{"x"}, Items: items("a", "b", "c")}, false},
		{"fewer removed than left out", wire.ConversationDelta{ID: "c", RemoveItems: []string{"x"}, Items: items("c")}, true},
	} {
		if got := worthDelta(&tt.d, c); got != tt.want {
			t.Errorf("%s: worth %v, want %v", tt.name, got, tt.want)
		}
	}
}
