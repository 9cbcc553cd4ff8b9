package desktop

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// startBus starts a real dbus-daemon --session for the test, on a socket
// in a folder of its own, and returns its address.
func startBus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		testenv.Unavailable(t, "dbus-daemon is not installed (Debian package dbus-daemon; see .ci/deps)")
	}
	dir, err := os.MkdirTemp("", "collie-bus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cmd := exec.Command(bin, "--session", "--nofork", "--nopidfile", "--address=unix:path="+filepath.Join(dir, "bus"), "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		testenv.Unavailablef(t, "dbus-daemon does not start: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(line)
}

// call is one Notify the test server received.
type call struct {
	App     string
	Replace uint32
	Icon    string
	Summary string
	Body    string
	Actions []string
	Hints   map[string]dbus.Variant
	Expire  int32
}

// server is a small notification server owning
// org.freedesktop.Notifications on the test's bus: it records every
// Notify and can invoke an action, as a desktop's would.
type server struct {
	conn *dbus.Conn
	caps []string

	mu    sync.Mutex
	calls []call
	next  uint32
}

func (s *server) Notify(app string, replace uint32, icon, summary, body string, actions []string, hints map[string]dbus.Variant, expire int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call{app, replace, icon, summary, body, actions, hints, expire})
	s.next++
	return s.next, nil
}

func (s *server) GetCapabilities() ([]string, *dbus.Error) { return s.caps, nil }

func (s *server) CloseNotification(uint32) *dbus.Error { return nil }

func (s *server) GetServerInformation() (string, string, string, string, *dbus.Error) {
	return "test", "collie", "1", "1.2", nil
}

func (s *server) recorded() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

func startServer(t *testing.T, addr string, caps ...string) *server {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &server{conn: conn, caps: append([]string{"body", "actions"}, caps...)}
	if err := conn.Export(s, Path, Interface); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName(BusName, dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own %s: %v %v", BusName, reply, err)
	}
	return s
}

func (s *server) invoke(t *testing.T, conn *dbus.Conn, id uint32, key string) {
	t.Helper()
	if err := conn.Emit(Path, Interface+".ActionInvoked", id, key); err != nil {
		t.Fatal(err)
	}
}

func message() push.Message {
	return push.Message{Agent: "deploy", Conversation: "release", Title: "deploy: a question is waiting",
		Body: "In release <b>now</b> & then.", URL: "http://127.0.0.1:8780/", Kind: push.KindQuestion}
}

// TestDesktopNotify_D6 shows a push on a real session bus: the call the
// notification server gets (title, body, the one action that opens the web
// app), the body escaped where the server draws markup, and the action
// opening the stored URL only when the server itself invokes it.
func TestDesktopNotify_D6(t *testing.T) {
	addr := startBus(t)
	srv := startServer(t, addr, "body-markup")
	opened := make(chan string, 4)
	handled := make(chan *dbus.Signal, 64)
	ctx := context.Background()
	// The daemon starts the provider under a start-up deadline: the
	// provider outlives it.
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	p, err := New(startCtx, Options{Address: addr, Open: func(u string) error { opened <- u; return nil }, handled: func(s *dbus.Signal) { handled <- s }})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	answer, err := p.SendReport(ctx, message())
	if err != nil {
		t.Fatal(err)
	}
	if answer != "the desktop's notification server showed it (id 1)" {
		t.Errorf("answer %q", answer)
	}
	calls := srv.recorded()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	if c.App != "Collie" || c.Summary != "deploy: a question is waiting" || c.Expire != -1 || c.Replace != 0 {
		t.Errorf("call %+v", c)
	}
	if c.Body != "In release &lt;b&gt;now&lt;/b&gt; &amp; then." {
		t.Errorf("body %q, want it escaped for a server that draws markup (X6)", c.Body)
	}
	if strings.Join(c.Actions, "|") != "default|Open Collie" {
		t.Errorf("actions %q, want only the one that opens the web app (D6)", c.Actions)
	}
	if u, _ := c.Hints["urgency"].Value().(byte); u != 1 {
		t.Errorf("urgency hint %v", c.Hints["urgency"])
	}

	// Another client on the bus invokes the action: ignored.
	other, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	srv.invoke(t, other, 1, "default")
	// The server invokes an action the notification does not have, or
	// one for a notification Collie did not show: ignored.
	srv.invoke(t, srv.conn, 1, "answer-yes")
	srv.invoke(t, srv.conn, 99, "default")
	waitHandled(t, handled, srv)
	select {
	case u := <-opened:
		t.Fatalf("opened %q for a signal that was not the server's open action", u)
	default:
	}
	// The server invokes the open action: the web app opens, once.
	srv.invoke(t, srv.conn, 1, "default")
	select {
	case u := <-opened:
		if u != "http://127.0.0.1:8780/" {
			t.Fatalf("opened %q", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the open action did not open the web app")
	}
	srv.invoke(t, srv.conn, 1, "default") // a second time: the URL was used
	waitHandled(t, handled, srv)
	select {
	case u := <-opened:
		t.Fatalf("opened %q again, or for a signal that was not the server's", u)
	default:
	}
}

// waitHandled returns once p has handled every signal sent before: it
// emits a NotificationClosed from the server and waits until p has
// handled it (signals are handled in order).
func waitHandled(t *testing.T, handled <-chan *dbus.Signal, srv *server) {
	t.Helper()
	if err := srv.conn.Emit(Path, Interface+".NotificationClosed", uint32(1000), uint32(2)); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case sig := <-handled:
			if sig.Name == Interface+".NotificationClosed" {
				return
			}
		case <-deadline:
			t.Fatal("the provider never handled the server's signals")
		}
	}
}

// TestDesktopPlainBody: a server without body-markup gets the body as it
// is; a push without a URL offers no action.
func TestDesktopPlainBody(t *testing.T) {
	addr := startBus(t)
	srv := startServer(t, addr)
	p, err := New(context.Background(), Options{Address: addr, Open: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	m := message()
	m.URL = ""
	if err := p.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	c := srv.recorded()[0]
	if c.Body != m.Body || len(c.Actions) != 0 {
		t.Fatalf("call %+v", c)
	}
}

// TestDesktopNoServer: a session bus with no notification server is an
// error that says so; no bus at all is one too.
func TestDesktopNoServer(t *testing.T) {
	addr := startBus(t)
	_, err := New(context.Background(), Options{Address: addr})
	if err == nil || !strings.Contains(err.Error(), "no notification server") {
		t.Fatalf("err %v", err)
	}
	_, err = SessionAddress(func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return t.TempDir()
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), "there is no session bus") {
		t.Fatalf("SessionAddress: %v", err)
	}
}

// portal is a desktop portal double: it records OpenURI calls.
type portal struct{ opened chan string }

func (p *portal) OpenURI(parent, uri string, options map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	p.opened <- uri
	return "/org/freedesktop/portal/desktop/request/1", nil
}

// TestDesktopOpensThroughPortal_D6: the open action asks the desktop
// portal to open the web app (the sandboxed daemon starts no browser of
// its own), with the URL the provider stored.
func TestDesktopOpensThroughPortal_D6(t *testing.T) {
	addr := startBus(t)
	srv := startServer(t, addr)
	pconn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pconn.Close()
	pt := &portal{opened: make(chan string, 1)}
	if err := pconn.Export(pt, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.OpenURI"); err != nil {
		t.Fatal(err)
	}
	if reply, err := pconn.RequestName("org.freedesktop.portal.Desktop", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the portal's name: %v %v", reply, err)
	}
	p, err := New(context.Background(), Options{Address: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send(context.Background(), message()); err != nil {
		t.Fatal(err)
	}
	srv.invoke(t, srv.conn, 1, "default")
	select {
	case u := <-pt.opened:
		if u != "http://127.0.0.1:8780/" {
			t.Fatalf("the portal was asked to open %q", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the portal was never asked to open the web app")
	}
}
