package systemd

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotifyFailureLoggedOnce_L2: a failed sd_notify is logged once, at
// error, with the state it was for and the reason; later failures are
// not logged again; without a failure nothing is logged
// (moved from cmd/collie).
func TestNotifyFailureLoggedOnce_L2(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	fails := true
	n := newNotifier(log, func(string) (bool, error) {
		if fails {
			return false, errors.New("connect: no such file or directory")
		}
		return true, nil
	})
	n.Notify("READY=1\nSTATUS=1 of 1 agents reachable")
	n.Notify("WATCHDOG=1")
	n.Notify("STATUS=0 of 1 agents reachable")
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "level=ERROR") || !strings.Contains(out, `state="READY=1"`) ||
		!strings.Contains(out, `err="connect: no such file or directory"`) || !strings.Contains(out, "sd_notify") {
		t.Errorf("want one error line naming READY=1 and the reason; got:\n%s", out)
	}
	select {
	case <-n.Ready():
	default:
		t.Error("READY=1 was asked for, but Ready is not closed")
	}

	buf.Reset()
	fails = false
	quiet := newNotifier(log, func(string) (bool, error) { return false, nil }) // no NOTIFY_SOCKET
	quiet.Notify("READY=1")
	quiet.Notify("WATCHDOG=1")
	if buf.Len() != 0 {
		t.Errorf("logged without a failure: %s", buf.String())
	}
}

// TestReady_L2: Ready closes at the first state with a READY=1 line, and
// only then.
func TestReady_L2(t *testing.T) {
	for _, tc := range []struct {
		states []string
		ready  bool
	}{
		{nil, false},
		{[]string{"STATUS=starting"}, false},
		{[]string{"STATUS=READY=1 is not a line of its own"}, false},
		{[]string{StateReady}, true},
		{[]string{"READY=1\nSTATUS=1 of 1 durable agents reachable"}, true},
		{[]string{"STATUS=x\nREADY=1"}, true},
		{[]string{StateReady, StateStopping, StateReady}, true}, // twice: no panic on a closed channel
	} {
		n := newNotifier(slog.New(slog.DiscardHandler), func(string) (bool, error) { return false, nil })
		for _, s := range tc.states {
			n.Notify(s)
		}
		var ready bool
		select {
		case <-n.Ready():
			ready = true
		default:
		}
		if ready != tc.ready {
			t.Errorf("after %q: ready %v, want %v", tc.states, ready, tc.ready)
		}
	}
}

// TestNotify_L2: Notify sends to a real $NOTIFY_SOCKET datagram socket,
// and tells "not run by systemd" (false, nil) from a lost message
// (false, error).
func TestNotify_L2(t *testing.T) {
	dir, err := os.MkdirTemp("", "sdnotify-") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	for _, tc := range []struct {
		name, socket string
		sent, err    bool
	}{
		{"not under systemd", "", false, false},
		{"systemd listens", sock, true, false},
		{"socket gone", filepath.Join(dir, "gone"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NOTIFY_SOCKET", tc.socket)
			for _, state := range []string{StateReady + "\n" + Status("1 of 1 durable agents reachable"), StateWatchdog, StateStopping} {
				sent, err := Notify(state)
				if sent != tc.sent || (err != nil) != tc.err {
					t.Fatalf("Notify(%q) = %v, %v; want sent %v, error %v", state, sent, err, tc.sent, tc.err)
				}
				if !sent {
					continue
				}
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				buf := make([]byte, 256)
				n, err := conn.Read(buf)
				if err != nil {
					t.Fatalf("systemd's end read nothing after Notify(%q): %v", state, err)
				}
				if got := string(buf[:n]); got != state {
					t.Errorf("systemd got %q, want %q", got, state)
				}
			}
		})
	}
}

// TestStatus: STATUS= is one line whatever the text holds, so a text
// cannot add an assignment (READY=1, say) of its own.
func TestStatus(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"1 of 2 durable agents reachable", "STATUS=1 of 2 durable agents reachable"},
		{"", "STATUS="},
		{"a\nREADY=1", "STATUS=a READY=1"},
		{"a\r\nb\rc", "STATUS=a b c"},
	} {
		got := Status(tc.text)
		if got != tc.want {
			t.Errorf("Status(%q) = %q, want %q", tc.text, got, tc.want)
		}
		if hasLine(got, StateReady) {
			t.Errorf("Status(%q) has a READY=1 line", tc.text)
		}
	}
}

// FuzzStatus: whatever the text, Status is one STATUS= line: it adds no
// assignment (READY=1, WATCHDOG=1) of its own, and keeps the text
// otherwise.
func FuzzStatus(f *testing.F) {
	for _, s := range []string{"", "1 of 2 durable agents reachable", "a\nREADY=1", "\r\nWATCHDOG=1\r", "ünïcode\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Status(text)
		if strings.ContainsAny(got, "\n") || !strings.HasPrefix(got, "STATUS=") {
			t.Fatalf("Status(%q) = %q: not one STATUS= line", text, got)
		}
		if hasLine(got, StateReady) || hasLine(got, StateWatchdog) {
			t.Fatalf("Status(%q) = %q adds an assignment", text, got)
		}
		if !strings.ContainsAny(text, "\r\n") && got != "STATUS="+text {
			t.Fatalf("Status(%q) = %q changed a text without line breaks", text, got)
		}
	})
}
