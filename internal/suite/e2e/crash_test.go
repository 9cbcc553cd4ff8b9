package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// slowApp is an agent that takes a send and never answers it: the bridge
// waits on it until it gives up or is killed.
type slowApp struct {
	got  chan string   // the request id of each send that reached it
	done chan struct{} // closed at the end of the test
}

var errNotHere = errors.New("not in this test")

func (a *slowApp) Send(r *wire.SendRequest) (wire.WriteReply, error) {
	a.got <- r.RequestID
	<-a.done
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Answer(*wire.AnswerRequest, durable.Transport) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Abort(*wire.AbortRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Action(*wire.ActionRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Rename(*wire.RenameRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Close(*wire.CloseRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Reopen(*wire.ReopenRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Starter(*wire.StarterRequest) (wire.WriteReply, error) {
	return wire.WriteReply{}, errNotHere
}
func (a *slowApp) Ask(context.Context, *wire.AskRequest, time.Duration) (wire.AskReply, error) {
	return wire.AskReply{}, errNotHere
}
func (a *slowApp) Grants() wire.GrantsReply { return wire.GrantsReply{} }
func (a *slowApp) Revoke(*wire.RevokeRequest) (wire.RevokeReply, error) {
	return wire.RevokeReply{}, errNotHere
}
func (a *slowApp) Snapshot() *wire.Snapshot {
	return &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Slow", Tabs: []wire.Tab{{ID: "t", Title: "Work",
		Conversations: []wire.Conversation{{ID: "main", Title: "Main"}}}}}}}
}

// TestKilledDaemonReceiptUnknown_A5_A6: the daemon as shipped (collie
// daemon, its audit log and receipts in the state folder, the device API)
// is killed with SIGKILL while a device's send waits on a slow agent.
// Started again, it tells the device the send's outcome is "unknown" (the
// agent may or may not have carried it out), as collie audit does, never
// "pending". The first refusal of a kind is on disk at once, so the kill
// cannot lose it (collie(1): a crash loses only repeats still counted).
func TestKilledDaemonReceiptUnknown_A5_A6(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := newBareHome(t, ctx, "ck-")
	run, cfgDir, write, collie := h.run, h.cfg, h.write, h.collie
	write(filepath.Join(cfgDir, "config.toml"), "[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\nwebpush = false\n")

	// The slow agent.
	sock := filepath.Join(run, "desk", "slow.sock")
	l, err := privsock.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := durable.NewServer(wire.Hello{Agent: "slow"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	app := &slowApp{got: make(chan string, 4), done: make(chan struct{})}
	srv.SetApp(app)
	actx, stop := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { srv.ServeTransport(actx, l, durable.Transport{Unchecked: true}); close(served) }()
	t.Cleanup(func() { close(app.done); stop(); <-served })
	sources, _ := json.Marshal(map[string]any{"version": 1, "sources": []map[string]string{{"name": "slow", "socket": sock}}})
	write(filepath.Join(cfgDir, "sources.json"), string(sources))

	// The daemon, as collie.service runs it.
	start := func() *exec.Cmd { return h.daemon(nil) }
	d := start()
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	dev, _ := pairDevice(t, collie("pair", "--local", "--json"), "phone")
	gate := map[string]string{device.WriteHeader: "1"}
	waitFor(t, loadGuard, "the slow agent on the device API", func() bool {
		var st device.State
		dev.call("GET", "/api/v1/state", "", nil, &st)
		return len(st.Agents) == 1 && st.Agents[0].Snapshot != nil
	})

	// A forged credential's writes: the first is written at once.
	forged := &client{t: t, base: dev.base, cred: "forged-" + strings.Repeat("x", 40)}
	for i := range 3 {
		if status := forged.call("POST", "/api/v1/agents/slow/abort", fmt.Sprintf(`{"requestId":"f%d","conversation":"main"}`, i), gate, nil); status != 401 {
			t.Fatalf("a forged credential's write: %d", status)
		}
	}
	// The send, held at the agent; the kill comes while it waits.
	req, _ := http.NewRequestWithContext(ctx, "POST", dev.base+"/api/v1/agents/slow/send", strings.NewReader(`{"requestId":"s-1","conversation":"main","text":"deploy it"}`))
	req.Header.Set("Authorization", "Bearer "+dev.cred)
	req.Header.Set(device.WriteHeader, "1")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil { // the kill cuts it
			resp.Body.Close()
		}
	}()
	select {
	case id := <-app.got:
		if id != "s-1" {
			t.Fatalf("the agent got %q", id)
		}
	case <-ctx.Done():
		t.Fatal("the send never reached the agent")
	}
	if err := d.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	d.Wait()

	d = start()
	var p control.Pairing
	if err := json.Unmarshal([]byte(collie("pair", "--local", "--json")), &p); err != nil {
		t.Fatal(err)
	}
	dev.base, _, _ = strings.Cut(p.URL, "/#pair=") // a new port
	var receipts []struct{ Event, RequestID, Result string }
	if status := dev.call("GET", "/api/v1/receipts", "", nil, &receipts); status != 200 {
		t.Fatalf("receipts: %d", status)
	}
	var got []string
	for _, r := range receipts {
		if r.RequestID == "s-1" {
			got = append(got, r.Event+" "+r.Result)
		}
	}
	if len(got) != 1 || got[0] != "send unknown" {
		t.Fatalf("the send's receipts after the kill: %q (all: %+v); want one, \"unknown\"", got, receipts)
	}

	// collie audit agrees, and the first forged refusal is there.
	out := collie("audit", "--json")
	var sends, forgedLines int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("collie audit --json: %v: %q", err, line)
		}
		switch {
		case m["event"] == "send" && m["requestId"] == "s-1":
			sends++
			if m["result"] != "pending" {
				t.Errorf("the send's line: %v", m)
			}
		case m["event"] == "abort" && m["device"] == "unknown":
			forgedLines++
		}
	}
	if sends != 1 || forgedLines < 1 {
		t.Fatalf("collie audit --json: %d lines of the send, %d of the forged aborts; want 1 and at least 1\n%s", sends, forgedLines, out)
	}
	if table := collie("audit"); !strings.Contains(table, "outcome unknown") {
		t.Fatalf("collie audit does not say the send's outcome is unknown:\n%s", table)
	}
}
