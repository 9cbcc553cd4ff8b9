package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/collie-linux/collie/internal/bridge"
)

// TestWatchdog_L2: when systemd asks for a watchdog (WatchdogSec=, seen as
// WATCHDOG_USEC), the daemon sends WATCHDOG=1 at half the interval while
// its bridge answers.
func TestWatchdog_L2(t *testing.T) {
	dir, err := os.MkdirTemp("", "wd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	t.Setenv("WATCHDOG_USEC", "200000") // 200 ms: a ping every 100 ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := bridge.New(bridge.Options{Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n := newNotifier(log, func(s string) (bool, error) { return daemon.SdNotify(false, s) })
	go func() { watchdog(ctx, b, n, log); close(done) }()

	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for i := 0; i < 2; i++ {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("ping %d: %v", i+1, err)
		}
		if got := string(buf[:n]); got != "WATCHDOG=1" {
			t.Fatalf("ping %d = %q, want WATCHDOG=1", i+1, got)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watchdog did not stop with its context")
	}
}

// TestNoWatchdog: without WATCHDOG_USEC it returns at once and sends
// nothing.
func TestNoWatchdog(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan struct{})
	n := newNotifier(log, func(string) (bool, error) { return false, nil })
	go func() { watchdog(context.Background(), bridge.New(bridge.Options{Log: log}), n, log); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog kept running without WATCHDOG_USEC")
	}
}
