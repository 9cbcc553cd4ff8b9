package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge"
	"github.com/collie-linux/collie/internal/bridge/config"
)

// TestHUPBeforeReady_L2: a SIGHUP that comes while the daemon starts is
// neither lost nor acted on early: reload runs only once the bridge is
// ready, once for the HUPs that waited.
func TestHUPBeforeReady_L2(t *testing.T) {
	hup := make(chan os.Signal, 1)
	ready := make(chan struct{})
	reloads := make(chan struct{}, 4)
	log := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		reloadOnHUP(ctx, hup, ready, func() error { reloads <- struct{}{}; return nil }, log)
		close(done)
	}()
	hup <- syscall.SIGHUP
	select {
	case hup <- syscall.SIGHUP: // the channel held the first: a second is coalesced
		t.Fatal("the loop took a HUP before the bridge was ready")
	default:
	}
	if len(reloads) != 0 {
		t.Fatal("reload ran before the bridge was ready")
	}
	close(ready)
	<-reloads // the HUP that waited
	hup <- syscall.SIGHUP
	<-reloads
	cancel()
	<-done
	if len(reloads) != 0 {
		t.Errorf("%d extra reloads", len(reloads))
	}
}

// TestSignalsCaughtFirst_L2: from catchSignals on, a SIGHUP to the process
// is queued for the daemon instead of killing it (its default action),
// and SIGTERM ends the context. A test binary without
// the handler would die here.
func TestSignalsCaughtFirst_L2(t *testing.T) {
	ctx, hup, stop := catchSignals(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hup:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP was not delivered to the channel")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not end the context")
	}
}

// TestReloadBeforeRun_L2: a bridge asked to reload before Run started says
// so instead of panicking on a nil context.
func TestReloadBeforeRun_L2(t *testing.T) {
	dir := t.TempDir()
	paths := config.Paths{Config: dir, State: dir, Runtime: dir}
	if err := os.WriteFile(paths.Sources(), []byte(`{"version":1,"sources":[{"name":"a","socket":"`+dir+`/a.sock"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	b := bridge.New(bridge.Options{Paths: paths, Log: slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))})
	if err := b.Reload(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("Reload before Run = %v; want an error saying the bridge is not running", err)
	}
}
