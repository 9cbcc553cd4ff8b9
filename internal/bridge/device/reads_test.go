package device

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// deltaView is two agents: demo with conversations c1 (an item and a
// question) and c2, and ops with c9.
func deltaView() []view.Agent {
	return []view.Agent{
		{AgentStatus: view.AgentStatus{Name: "demo", Reachable: true, Checked: time.Unix(1, 0)},
			Snapshot: &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Site", Tabs: []wire.Tab{{ID: "t", Conversations: []wire.Conversation{
				{ID: "c1", Title: "Ship", Items: []wire.Item{{ID: "i1", Kind: wire.KindMarkdown, Text: "# hi"}},
					Questions: []wire.Question{{ID: "q1", Kind: wire.AskYesNo, Title: "Deploy?", Revision: 1}}},
				{ID: "c2", Title: "Notes"},
			}}}}}}},
		{AgentStatus: view.AgentStatus{Name: "ops", Reachable: true},
			Snapshot: &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Tabs: []wire.Tab{{ID: "t", Conversations: []wire.Conversation{{ID: "c9"}}}}}}}},
	}
}

// cloneView copies v deeply (through JSON), so that an edit is a new
// snapshot, as the bridge makes one.
func cloneView(t *testing.T, v []view.Agent) []view.Agent {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out []view.Agent
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func conv(a *view.Agent, id string) *wire.Conversation {
	cs := a.Snapshot.Spaces[0].Tabs[0].Conversations
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

// TestFeedChangeSets_K8: each change of the bridge's view is told as the
// agents and conversations it touched, so a device reads only those
// (devices get deltas); what a device does not receive (the
// poll time) and a new snapshot with the same content are no change.
func TestFeedChangeSets_K8(t *testing.T) {
	const r = 2 // the revision of the first change after the base
	for _, tt := range []struct {
		name string
		edit func(v []view.Agent) []view.Agent
		want []Change
	}{
		{"item_added", func(v []view.Agent) []view.Agent {
			c := conv(&v[0], "c1")
			c.Items = append(c.Items, wire.Item{ID: "i2", Kind: wire.KindText, Text: "more"})
			return v
		}, []Change{{Agent: "demo", Conversations: []ConvRev{{"c1", r}}}}},
		{"item_text_changed", func(v []view.Agent) []view.Agent {
			conv(&v[0], "c1").Items[0].Text = "# hello"
			return v
		}, []Change{{Agent: "demo", Conversations: []ConvRev{{"c1", r}}}}},
		{"question_changed", func(v []view.Agent) []view.Agent {
			conv(&v[0], "c1").Questions[0].Revision = 2
			return v
		}, []Change{{Agent: "demo", Conversations: []ConvRev{{"c1", r}}}}},
		{"conversation_renamed", func(v []view.Agent) []view.Agent {
			conv(&v[0], "c2").Title = "Release notes"
			return v
		}, []Change{{Agent: "demo", Conversations: []ConvRev{{"c2", r}}}}},
		{"conversation_added", func(v []view.Agent) []view.Agent {
			tab := &v[1].Snapshot.Spaces[0].Tabs[0]
			tab.Conversations = append(tab.Conversations, wire.Conversation{ID: "c10"})
			return v
		}, []Change{{Agent: "ops", Outline: r, Conversations: []ConvRev{{"c10", r}}}}},
		{"conversation_removed", func(v []view.Agent) []view.Agent {
			tab := &v[0].Snapshot.Spaces[0].Tabs[0]
			tab.Conversations = tab.Conversations[:1]
			return v
		}, []Change{{Agent: "demo", Outline: r, Removed: []string{"c2"}}}},
		{"belt_changed", func(v []view.Agent) []view.Agent {
			v[1].Snapshot.Belt = []wire.Button{{ID: "b", Label: "Tests"}}
			return v
		}, []Change{{Agent: "ops", Outline: r}}},
		{"agent_unreachable", func(v []view.Agent) []view.Agent {
			v[1].Reachable, v[1].Reason, v[1].Snapshot = false, "socket-missing: no socket", nil
			return v
		}, []Change{{Agent: "ops", Outline: r, Removed: []string{"c9"}}}},
		{"agent_gone", func(v []view.Agent) []view.Agent {
			return v[:1]
		}, []Change{{Agent: "ops", Gone: true}}},
		{"agent_added", func(v []view.Agent) []view.Agent {
			return append(v, view.Agent{AgentStatus: view.AgentStatus{Name: "web", Reachable: true},
				Snapshot: &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Tabs: []wire.Tab{{ID: "t", Conversations: []wire.Conversation{{ID: "w1"}, {ID: "w2"}}}}}}}})
		}, []Change{{Agent: "web", Outline: r, Conversations: []ConvRev{{"w1", r}, {"w2", r}}}}},
		{"two_agents_at_once", func(v []view.Agent) []view.Agent {
			conv(&v[0], "c2").Items = []wire.Item{{ID: "n", Kind: wire.KindText, Text: "x"}}
			v[1].Reachable, v[1].Reason = false, "refused"
			return v
		}, []Change{{Agent: "demo", Conversations: []ConvRev{{"c2", r}}}, {Agent: "ops", Outline: r}}},
		{"only_the_poll_time_moved", func(v []view.Agent) []view.Agent {
			v[0].Checked = time.Unix(99, 0)
			return v
		}, nil},
		{"same_content_new_snapshot", func(v []view.Agent) []view.Agent { return v }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			back := &agentSide{view: deltaView()}
			tr := newTracker(back.View, "e")
			base := tr.current()
			if base.rev != 1 {
				t.Fatalf("the first outlook has revision %d", base.rev)
			}
			back.view = tt.edit(cloneView(t, back.view))
			now := tr.current()
			got := diff(base, now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("changes %+v, want %+v", got, tt.want)
			}
			if (now.rev != base.rev) != (tt.want != nil) {
				t.Fatalf("revision %d after %d, for changes %+v", now.rev, base.rev, got)
			}
		})
	}
}

// TestRevisionsNeverGoBack: a conversation that changes and changes
// back has a third revision, not its first: a device that read the
// middle version is told to read it again.
func TestRevisionsNeverGoBack(t *testing.T) {
	back := &agentSide{view: deltaView()}
	tr := newTracker(back.View, "e")
	first := tr.current()
	orig := back.view
	edited := cloneView(t, orig)
	conv(&edited[0], "c1").Items[0].Text = "# changed"
	back.view = edited
	mid := tr.current()
	back.view = cloneView(t, orig)
	last := tr.current()
	c := func(o *outlook) int64 { return o.byName["demo"].convs["c1"].rev }
	if !(c(first) < c(mid) && c(mid) < c(last)) {
		t.Fatalf("c1's revisions: %d, %d, %d; want each newer", c(first), c(mid), c(last))
	}
	if got := diff(mid, last); len(got) != 1 || got[0].Conversations[0] != (ConvRev{"c1", c(last)}) {
		t.Fatalf("changing back was told as %+v", got)
	}
}

// get makes a GET as a device, with If-None-Match when etag is set.
func (f *fixture) get(t *testing.T, path, etag string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+f.cred)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (f *fixture) setView(v []view.Agent) {
	f.back.mu.Lock()
	defer f.back.mu.Unlock()
	f.back.view = v
}

// TestReadsETag_K8: /api/v1/state, an agent's outline and a conversation
// each carry a strong ETag; sent back in If-None-Match it gets 304 and no
// body while what the read returns is unchanged, and 200 with a new ETag
// once it changed. A change elsewhere leaves a conversation's tag as it
// was. Reads still need the credential.
func TestReadsETag_K8(t *testing.T) {
	f := newFixture(t)
	f.setView(deltaView())
	paths := []string{"/api/v1/state", "/api/v1/agents", "/api/v1/agents/demo", "/api/v1/agents/demo/conversations/c1", "/api/v1/agents/demo/conversations/c2"}
	tags := map[string]string{}
	for _, p := range paths {
		status, h, body := f.get(t, p, "")
		etag := h.Get("ETag")
		if status != 200 || !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") {
			t.Fatalf("GET %s: %d, ETag %q: %s", p, status, etag, body)
		}
		tags[p] = etag
		for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
			status, _, body := f.get(t, p, inm)
			if status != http.StatusNotModified || body != "" {
				t.Fatalf("GET %s If-None-Match %s: %d %q, want 304 and no body", p, inm, status, body)
			}
		}
		if status, _, _ := f.get(t, p, `"stale"`); status != 200 {
			t.Fatalf("GET %s with another tag: %d", p, status)
		}
	}
	// The poll time moves: nothing a device receives changed.
	v := cloneView(t, deltaView())
	v[0].Checked = time.Unix(50, 0)
	f.setView(v)
	for _, p := range paths {
		if status, _, _ := f.get(t, p, tags[p]); status != http.StatusNotModified {
			t.Fatalf("GET %s after the poll time moved: %d, want 304", p, status)
		}
	}
	// c1 changes: state, the outline's tag and c1's change, c2's does not.
	v = cloneView(t, v)
	conv(&v[0], "c1").Items[0].Text = "# new"
	f.setView(v)
	for _, p := range paths {
		status, h, body := f.get(t, p, tags[p])
		want := http.StatusOK
		if strings.HasSuffix(p, "/c2") {
			want = http.StatusNotModified
		}
		if status != want || (want == 200 && h.Get("ETag") == tags[p]) {
			t.Fatalf("GET %s after c1 changed: %d, ETag %q (was %q), want %d: %s", p, status, h.Get("ETag"), tags[p], want, body)
		}
	}
	var st State
	_, h, body := f.get(t, "/api/v1/state", "")
	if err := json.Unmarshal([]byte(body), &st); err != nil || `"`+st.Rev+`"` != h.Get("ETag") ||
		st.Revs["demo"].Conversations["c1"] <= st.Revs["demo"].Conversations["c2"] || strings.Contains(body, `"checked"`) {
		t.Fatalf("state: rev %q, ETag %q, revs %+v (%v): %s", st.Rev, h.Get("ETag"), st.Revs, err, body)
	}
	// Without the credential: nothing, tag or not.
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/agents/demo/conversations/c1", nil)
	req.Header.Set("If-None-Match", tags[paths[3]])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("ETag") != "" {
		t.Fatalf("an unpaired conversation read: %d, ETag %q", resp.StatusCode, resp.Header.Get("ETag"))
	}
}

// TestConversationRead: one conversation, whole, with its revision; an
// agent's outline without items or questions; unknown names are 404 with
// a sentence.
func TestConversationRead(t *testing.T) {
	f := newFixture(t)
	f.setView(deltaView())
	status, _, body := f.get(t, "/api/v1/agents/demo/conversations/c1", "")
	var cr ConversationReply
	if err := json.Unmarshal([]byte(body), &cr); status != 200 || err != nil {
		t.Fatalf("read c1: %d %v %s", status, err, body)
	}
	if want := deltaView()[0].Snapshot.Spaces[0].Tabs[0].Conversations[0]; cr.Agent != "demo" || cr.Rev < 1 || cr.Conversation == nil || !reflect.DeepEqual(*cr.Conversation, want) {
		t.Fatalf("read c1: %+v, want %+v", cr, want)
	}
	status, _, body = f.get(t, "/api/v1/agents", "")
	var all AgentsReply
	if err := json.Unmarshal([]byte(body), &all); status != 200 || err != nil || len(all.Agents) != 2 || all.Agents[1].Agent.Name != "ops" || strings.Contains(body, "Deploy?") {
		t.Fatalf("read the agents: %d %v %s", status, err, body)
	}
	status, _, body = f.get(t, "/api/v1/agents/demo", "")
	var ar AgentReply
	if err := json.Unmarshal([]byte(body), &ar); status != 200 || err != nil || ar.Agent.Name != "demo" || ar.Agent.Snapshot == nil {
		t.Fatalf("read demo: %d %v %s", status, err, body)
	}
	if got := ar.Agent.Snapshot.Spaces[0].Tabs[0].Conversations; !reflect.DeepEqual(got, []string{"c1", "c2"}) || strings.Contains(body, "Deploy?") || ar.Revs.Conversations["c1"] != cr.Rev {
		t.Fatalf("the outline lists %q, revs %+v: %s", got, ar.Revs, body)
	}
	for _, tt := range []struct{ path, code, says string }{
		{"/api/v1/agents/nobody/conversations/c1", wire.CodeUnknownTarget, `no durable agent called "nobody" is attached`},
		{"/api/v1/agents/nobody", wire.CodeUnknownTarget, `no durable agent called "nobody" is attached`},
		{"/api/v1/agents/demo/conversations/c9", wire.CodeNotFound, `agent "demo" has no conversation "c9"`},
	} {
		status, _, body := f.get(t, tt.path, "")
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal([]byte(body), &e)
		if status != 404 || e.Error.Code != tt.code || !strings.HasPrefix(e.Error.Message, tt.says) {
			t.Errorf("GET %s: %d %s", tt.path, status, body)
		}
	}
}

// TestFeedSaysWhatChanged: over a real event stream, the first event
// says to read everything, and a change says which conversation; a notice
// that changed nothing sends nothing, and changes made before the stream
// wrote are told together.
func TestFeedSaysWhatChanged(t *testing.T) {
	f := newFixture(t)
	f.setView(deltaView())
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan Event, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var ev Event
				if err := json.Unmarshal([]byte(d), &ev); err != nil {
					t.Errorf("event data %q: %v", d, err)
				}
				events <- ev
			}
		}
	}()
	next := func() Event {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5 s")
		}
		return Event{}
	}
	first := next()
	_, h, _ := f.get(t, "/api/v1/state", "")
	if !first.All || `"`+first.Rev+`"` != h.Get("ETag") {
		t.Fatalf("the first event %+v, state's ETag %s", first, h.Get("ETag"))
	}
	f.api.Changed() // nothing changed: no event
	v := cloneView(t, deltaView())
	conv(&v[0], "c2").Title = "Notes 2"
	v = v[:1] // and ops goes
	f.setView(v)
	f.api.Changed()
	ev := next()
	_, h, _ = f.get(t, "/api/v1/state", "")
	want := []Change{{Agent: "demo", Conversations: []ConvRev{{"c2", 2}}}, {Agent: "ops", Gone: true}}
	if ev.All || !reflect.DeepEqual(ev.Changes, want) || `"`+ev.Rev+`"` != h.Get("ETag") {
		t.Fatalf("event %+v (state's ETag %s), want changes %+v", ev, h.Get("ETag"), want)
	}
}

// FuzzETagMatch: If-None-Match never panics; a header that is the tag,
// or lists it among others, weak or not, matches; one that does not name
// it (and is not "*") does not.
func FuzzETagMatch(f *testing.F) {
	for _, s := range []string{`"e.1"`, `"a", "e.1"`, `W/"e.1"`, "*", "", `"e.10"`, `e.1`, `,,"e.1",`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		const etag = `"e.1"`
		got := etagMatch(header, etag)
		named := strings.TrimSpace(header) == "*"
		for tok := range strings.SplitSeq(header, ",") {
			if strings.TrimPrefix(strings.TrimSpace(tok), "W/") == etag {
				named = true
			}
		}
		if got != named {
			t.Fatalf("etagMatch(%q) = %v, want %v", header, got, named)
		}
		if !etagMatch(etag+", "+header, etag) {
			t.Fatalf("a list that starts with the tag did not match: %q", header)
		}
	})
}
