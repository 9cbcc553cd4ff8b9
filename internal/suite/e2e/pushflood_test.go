package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// ntfyServer records the pushes a daemon publishes to it.
type ntfyServer struct {
	mu    sync.Mutex
	posts []map[string]any
	srv   *httptest.Server
}

func newNtfy(t *testing.T) *ntfyServer {
	n := &ntfyServer{}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m)
		n.mu.Lock()
		n.posts = append(n.posts, m)
		id := len(n.posts)
		n.mu.Unlock()
		fmt.Fprintf(w, `{"id":"m%d","event":"message"}`, id)
	}))
	t.Cleanup(n.srv.Close)
	return n
}

func (n *ntfyServer) titles() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, p := range n.posts {
		s, _ := p["title"].(string)
		out = append(out, s)
	}
	return out
}

// floodAgent is a durable agent on a private socket whose questions grow.
type floodAgent struct {
	srv   *durable.Server
	mu    sync.Mutex
	convs map[string]*wire.Conversation
	order []string
	n     int
}

func (a *floodAgent) ask(t *testing.T, conv string, count int) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.convs[conv]
	if !ok {
		c = &wire.Conversation{ID: conv, Title: "Conversation " + conv}
		a.convs[conv] = c
		a.order = append(a.order, conv)
	}
	for range count {
		c.Questions = append(c.Questions, wire.Question{ID: fmt.Sprint("q", a.n), Kind: wire.AskYesNo,
			Title: fmt.Sprintf("Run step %d?", a.n), Revision: 1, ToolCall: fmt.Sprint("call-", a.n)})
		a.n++
	}
	tab := wire.Tab{ID: "t", Title: "Work"}
	for _, id := range a.order {
		tab.Conversations = append(tab.Conversations, *a.convs[id])
	}
	if err := a.srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Flood", Tabs: []wire.Tab{tab}}}}); err != nil {
		t.Fatal(err)
	}
}

// TestPushFloodOnARunningDaemon_D9 is the push flood on the daemon as
// shipped (collie daemon, its real guard file, the ntfy provider, the
// device API), with a durable agent on a private socket. The hour began
// before this daemon: its guard file holds 20 pushes sent 5 to 24
// minutes ago, as an earlier run left them. The agent asks 1,000
// questions within seconds: exactly 10 are pushed (the host's minute, and
// the 30th of the hour), 990 held back. Once that minute has passed, the
// next question becomes the one summary ("991 more questions are
// waiting"); then nothing is pushed, across a restart of the daemon too.
// Every card is on the device API all the same. The in-process test
// (internal/bridge's TestThousandQuestionsInAMinute_D9) holds the same
// rules over the hour on a fake clock.
func TestPushFloodOnARunningDaemon_D9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	h := newBareHome(t, ctx, "cf-")
	run, cfgDir, state, write, collie := h.run, h.cfg, h.state, h.write, h.collie

	ntfy := newNtfy(t)
	token := filepath.Join(cfgDir, "ntfy-token")
	write(token, "tk_flood0123456789abcdef\n")
	write(filepath.Join(cfgDir, "config.toml"), fmt.Sprintf("[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\nwebpush = false\n\n[push.ntfy]\nserver = %q\ntopic = \"collie-flood-topic\"\ntoken_file = %q\n", ntfy.srv.URL, token))
	// The hour so far: 20 pushes, the last 5 minutes ago.
	var sent []int64
	for i := range 20 {
		sent = append(sent, time.Now().Add(-24*time.Minute+time.Duration(i)*time.Minute).UnixMilli())
	}
	guard, _ := json.Marshal(map[string]any{"version": 1, "sent": sent, "conversations": map[string]any{}, "held": [][2]int64{}, "silentUntil": 0, "keys": ""})
	write(filepath.Join(state, "push-guard.json"), string(guard))

	// The agent.
	sock := filepath.Join(run, "desk", "flood.sock")
	l, err := privsock.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: "flood"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	agent := &floodAgent{srv: srv, convs: map[string]*wire.Conversation{}}
	agent.ask(t, "c00", 0)
	actx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { srv.Serve(actx, l); close(served) }()
	t.Cleanup(func() { stop(); <-served })
	sources, _ := json.Marshal(map[string]any{"version": 1, "sources": []map[string]string{{"name": "flood", "socket": sock}}})
	write(filepath.Join(cfgDir, "sources.json"), string(sources))

	// The daemon, as collie.service runs it.
	ctl := h.control()
	start := func() (stop func()) {
		t.Helper()
		var log strings.Builder
		d := h.daemon(&log)
		return func() {
			d.Process.Signal(os.Interrupt)
			d.Wait()
			if strings.Contains(log.String(), "tk_flood") || strings.Contains(log.String(), "collie-flood-topic") {
				t.Error("the daemon logged the ntfy token or topic")
			}
		}
	}
	stopDaemon := start()

	// A paired device.
	dev, _ := pairDevice(t, collie("pair", "--local", "--json"), "phone")
	cards := func() int {
		var st device.State
		dev.call("GET", "/api/v1/state", "", nil, &st)
		return len(questions(st))
	}
	status := func() control.PushStatus {
		s, err := ctl.PushStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// 1,000 questions within seconds, over 50 conversations.
	askedAt := time.Now()
	for i := range 20 {
		for c := range 50 {
			agent.ask(t, fmt.Sprintf("c%02d", c), 1)
		}
		if i%5 == 4 {
			collie("durable", "list") // reads beside the held ones
		}
	}
	waitFor(t, loadGuard, "1,000 cards and every question decided", func() bool {
		s := status()
		return cards() == 1000 && s.Sent+s.Held == 1000 && len(ntfy.titles()) == int(s.Sent)
	})
	if s := status(); s.Sent != 10 || s.Held != 990 || s.SentLastHour != 30 || len(ntfy.titles()) != 10 {
		t.Fatalf("after 1,000 questions: %+v, %d at ntfy; want 10 pushed (30 in the hour), 990 held back", s, len(ntfy.titles()))
	}
	for _, title := range ntfy.titles() {
		if !strings.HasPrefix(title, "flood: ") {
			t.Fatalf("a push's title %q does not name the agent", title)
		}
	}

	// Past the host's minute: the next question is the 31st push of the
	// hour, the summary, and then the silent hour.
	waitFor(t, 75*time.Second, "the host's minute to pass (the guard lets the next push out)", func() bool {
		return status().HoldingBack == ""
	})
	if held := time.Since(askedAt); held < time.Minute {
		t.Fatalf("the guard let pushes out again %s after the flood began; want a minute", held)
	}
	agent.ask(t, "late", 1)
	waitFor(t, loadGuard, "the summary push", func() bool { return len(ntfy.titles()) == 11 })
	if got := ntfy.titles()[10]; got != "Collie: 991 more questions are waiting" {
		t.Fatalf("the 31st push: %q", got)
	}
	agent.ask(t, "silent", 5)
	waitFor(t, loadGuard, "the silent hour's questions decided", func() bool {
		s := status()
		return cards() == 1006 && s.Held == 995
	})
	if s := status(); s.HoldingBack == "" || s.Until.Before(time.Now().Add(58*time.Minute)) {
		t.Fatalf("in the silent hour: %+v", s)
	}

	// A restart keeps the silent hour.
	stopDaemon()
	stopDaemon = start()
	defer stopDaemon()
	var p control.Pairing
	if err := json.Unmarshal([]byte(collie("pair", "--local", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	dev.base, _, _ = strings.Cut(p.URL, "/#pair=") // a new port
	agent.ask(t, "after-restart", 1)
	waitFor(t, loadGuard, "the question after the restart decided", func() bool {
		s := status()
		return s.Held == 1 && cards() == 1007
	})
	if n := len(ntfy.titles()); n != 11 {
		t.Fatalf("%d pushes; after the summary, and across a restart, want none", n-11)
	}
}
