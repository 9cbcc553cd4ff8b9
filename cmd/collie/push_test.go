package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
)

// ntfyDouble is the script command `ntfy`: it starts a local ntfy server
// double that appends each request (its Authorization header and body) to
// $WORK/ntfy.log and answers as ntfy does, writes a 0600 token file, and
// writes config.toml with [push.ntfy] pointing at the double.
func ntfyDouble(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: ntfy")
	}
	work := ts.Getenv("WORK")
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		n++
		f, err := os.OpenFile(filepath.Join(work, "ntfy.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "%s %s Authorization: %s\n%s", r.Method, r.URL.Path, r.Header.Get("Authorization"), body)
			f.Close()
		}
		fmt.Fprintf(w, `{"id":"m%d","event":"message"}`, n)
	}))
	ts.Defer(srv.Close)
	token := filepath.Join(work, "ntfy-token")
	ts.Check(os.WriteFile(token, []byte("tk_scriptsecret0123456789abcdef\n"), 0o600))
	cfg := fmt.Sprintf("[devices]\nlisten = \"127.0.0.1:0\"\n\n[push]\ndesktop = false\nwebpush = false\n\n[push.ntfy]\nserver = %q\ntopic = \"collie-script-topic\"\ntoken_file = %q\npriority = \"high\"\n", srv.URL, token)
	dir := filepath.Join(ts.Getenv("XDG_CONFIG_HOME"), "collie")
	ts.Check(os.MkdirAll(dir, 0o700))
	ts.Check(os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600))
}

// notifyServer is a desktop notification server double on the script's
// session bus: it logs each Notify to $WORK/notify.log.
type notifyServer struct {
	log string
	mu  sync.Mutex
	n   uint32
}

func (s *notifyServer) Notify(app string, _ uint32, _, summary, body string, actions []string, _ map[string]dbus.Variant, _ int32) (uint32, *dbus.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if f, err := os.OpenFile(s.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintf(f, "app=%s summary=%s body=%s actions=%v\n", app, summary, body, actions)
		f.Close()
	}
	return s.n, nil
}

func (s *notifyServer) GetCapabilities() ([]string, *dbus.Error) {
	return []string{"body", "actions"}, nil
}

// notifyd is the script command `notifyd`: it starts a dbus-daemon
// --session for the script, a notification server double on it, and sets
// DBUS_SESSION_BUS_ADDRESS for the commands after it.
func notifyd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: notifyd")
	}
	dir, err := os.MkdirTemp("", "cb-")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(dir) })
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=unix:path="+filepath.Join(dir, "bus"), "--print-address=1")
	out, err := cmd.StdoutPipe()
	ts.Check(err)
	ts.Check(cmd.Start())
	ts.Defer(func() { cmd.Process.Kill(); cmd.Wait() })
	// The bus prints its address once it listens.
	line, err := bufio.NewReader(out).ReadString('\n')
	ts.Check(err)
	addr := strings.TrimSpace(line)
	conn, err := dbus.Connect(addr)
	ts.Check(err)
	ts.Defer(func() { conn.Close() })
	s := &notifyServer{log: filepath.Join(ts.Getenv("WORK"), "notify.log")}
	ts.Check(conn.Export(s, "/org/freedesktop/Notifications", "org.freedesktop.Notifications"))
	reply, err := conn.RequestName("org.freedesktop.Notifications", dbus.NameFlagDoNotQueue)
	ts.Check(err)
	if reply != dbus.RequestNameReplyPrimaryOwner {
		ts.Fatalf("could not own org.freedesktop.Notifications")
	}
	ts.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
}

// TestReportPushTest: collie push test prints one line per provider and
// one per failure of a provider with several destinations; a provider with
// nowhere to deliver to says "nothing to deliver", never ok; a test held
// back says why and when the next can go out.
func TestReportPushTest(t *testing.T) {
	until := time.Date(2026, 12, 2, 18, 41, 5, 0, time.Local)
	for _, tc := range []struct {
		name    string
		t       control.PushTest
		out     string
		errWant string // "" for success
	}{
		{"ok", control.PushTest{Answers: []control.PushAnswer{{Provider: "ntfy", OK: true, Answer: "ntfy at https://ntfy.sh accepted it (message m1)"}}},
			"ntfy: ok: ntfy at https://ntfy.sh accepted it (message m1)\n", ""},
		{"several_failures_one_line_each", control.PushTest{Answers: []control.PushAnswer{
			{Provider: "ntfy", OK: true, Answer: "sent"},
			{Provider: "webpush", Answer: "web push to device d-1: https://fcm.googleapis.com failed (503)\nweb push to device d-2: https://updates.push.services.mozilla.com refused the push (400)"}}},
			"ntfy: ok: sent\nwebpush: failed: web push to device d-1: https://fcm.googleapis.com failed (503)\nwebpush: failed: web push to device d-2: https://updates.push.services.mozilla.com refused the push (400)\n",
			"1 push provider failed"},
		{"nothing_to_deliver", control.PushTest{Answers: []control.PushAnswer{{Provider: "webpush", Idle: true, Answer: "no paired device has turned on notifications yet"}}},
			"webpush: nothing to deliver: no paired device has turned on notifications yet\n", "nothing to deliver"},
		{"one_idle_one_ok", control.PushTest{Answers: []control.PushAnswer{{Provider: "ntfy", OK: true, Answer: "sent"}, {Provider: "webpush", Idle: true, Answer: "none"}}},
			"ntfy: ok: sent\nwebpush: nothing to deliver: none\n", ""},
		{"held", control.PushTest{Held: "3 test pushes in the last minute", Until: until}, "", "the push guard held the test push back: 3 test pushes in the last minute; the next can go out at 18:41:05"},
		{"none", control.PushTest{}, "", "no push provider is in use"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			err := reportPushTest(&b, tc.t, false)
			if b.String() != tc.out {
				t.Errorf("printed:\n%s\nwant:\n%s", b.String(), tc.out)
			}
			switch {
			case tc.errWant == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.errWant != "" && (err == nil || !strings.Contains(err.Error(), tc.errWant)):
				t.Errorf("err %v, want %q", err, tc.errWant)
			}
		})
	}
}

// TestWebPushContact: [push] contact is the VAPID contact the daemon's
// Web Push provider signs with; unset, the project's page.
func TestWebPushContact(t *testing.T) {
	paths := config.Paths{State: t.TempDir()}
	if o := webPushOptions(paths, config.Push{Contact: "mailto:ops@example.org"}, nil); o.Subject != "mailto:ops@example.org" || o.StateDir != paths.State {
		t.Fatalf("options %+v", o)
	}
	if o := webPushOptions(paths, config.Push{}, nil); o.Subject != config.DefaultContact {
		t.Fatalf("default contact %q", o.Subject)
	}
}
