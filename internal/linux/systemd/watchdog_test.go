package systemd

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// pinger is a Notifier whose sends are recorded, with the bubble's time
// since start, on a channel.
func pinger(log *slog.Logger, start time.Time) (*Notifier, <-chan time.Duration) {
	sent := make(chan time.Duration, 100)
	n := newNotifier(log, func(state string) (bool, error) {
		if state != StateWatchdog {
			panic("the watchdog sent " + state)
		}
		sent <- time.Since(start)
		return true, nil
	})
	return n, sent
}

func drain(c <-chan time.Duration) []time.Duration {
	var got []time.Duration
	for {
		select {
		case d := <-c:
			got = append(got, d)
		default:
			return got
		}
	}
}

// TestWatchdog_L2: when systemd asks for a watchdog (WatchdogSec=, seen as
// WATCHDOG_USEC), WATCHDOG=1 goes at half the interval while alive
// returns, and the watchdog stops with its context (moved from
// cmd/collie, now on synctest's clock).
func TestWatchdog_L2(t *testing.T) {
	for _, tc := range []struct {
		usec string
		ping time.Duration
	}{
		{"30000000", 15 * time.Second}, // collie.service's WatchdogSec=30s
		{"200000", 100 * time.Millisecond},
	} {
		t.Run(tc.usec, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tc.usec)
			t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
			synctest.Test(t, func(t *testing.T) {
				var logged bytes.Buffer
				n, sent := pinger(slog.New(slog.NewTextHandler(&logged, nil)), time.Now())
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { n.Watchdog(ctx, func() {}); close(done) }()

				time.Sleep(3*tc.ping + tc.ping/2)
				synctest.Wait()
				want := []time.Duration{tc.ping, 2 * tc.ping, 3 * tc.ping}
				if got := drain(sent); !slices.Equal(got, want) {
					t.Errorf("keep-alives at %v, want %v", got, want)
				}
				cancel()
				<-done // synctest.Test also fails if it is left running
				time.Sleep(10 * tc.ping)
				if got := drain(sent); len(got) != 0 {
					t.Errorf("keep-alives after the context ended: %v", got)
				}
				if logged.Len() != 0 {
					t.Errorf("logged: %s", logged.String())
				}
			})
		})
	}
}

// TestWatchdogStuck_L2: while alive blocks (a bridge stuck on its lock),
// no WATCHDOG=1 goes, so systemd's watchdog fires; the keep-alives come
// back as soon as it returns.
func TestWatchdogStuck_L2(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	synctest.Test(t, func(t *testing.T) {
		n, sent := pinger(slog.New(slog.DiscardHandler), time.Now())
		release := make(chan struct{})
		calls := 0
		alive := func() {
			if calls++; calls == 2 {
				<-release
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { n.Watchdog(ctx, alive); close(done) }()

		time.Sleep(100 * time.Second)
		synctest.Wait()
		if got := drain(sent); !slices.Equal(got, []time.Duration{15 * time.Second}) {
			t.Errorf("keep-alives while stuck from 30s to 100s: %v; want only the one at 15s", got)
		}
		close(release)
		synctest.Wait()
		if got := drain(sent); len(got) == 0 || got[0] != 100*time.Second {
			t.Errorf("keep-alives once unstuck at 100s: %v; want one at once", got)
		}
		cancel()
		<-done
	})
}

// TestNoWatchdog_L2: without a watchdog for this process the watchdog
// returns at once and sends nothing; a setting it cannot read is logged
// once, as a warning, and nothing is sent.
func TestNoWatchdog_L2(t *testing.T) {
	for _, tc := range []struct {
		name, usec, pid string
		warns           bool
	}{
		{"no WatchdogSec=", "", "", false},
		{"another process's", "30000000", strconv.Itoa(os.Getpid() + 1), false},
		{"unreadable", "thirty seconds", "", true},
		{"negative", "-5", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("WATCHDOG_USEC", tc.usec)
			t.Setenv("WATCHDOG_PID", tc.pid)
			_, enabled, err := WatchdogInterval()
			if enabled || (err != nil) != tc.warns {
				t.Errorf("WatchdogInterval: enabled %v, err %v; want disabled, error %v", enabled, err, tc.warns)
			}
			synctest.Test(t, func(t *testing.T) {
				var logged bytes.Buffer
				start := time.Now()
				n, sent := pinger(slog.New(slog.NewTextHandler(&logged, nil)), start)
				n.Watchdog(t.Context(), func() { t.Error("alive called without a watchdog") })
				if d := time.Since(start); d != 0 {
					t.Errorf("returned after %v, want at once", d)
				}
				if got := drain(sent); len(got) != 0 {
					t.Errorf("sent keep-alives: %v", got)
				}
				warned := strings.Count(logged.String(), "level=WARN") == 1 && strings.Contains(logged.String(), "watchdog setting cannot be read")
				if warned != tc.warns || strings.Count(logged.String(), "\n") > 1 {
					t.Errorf("logged %q; want a warning: %v", logged.String(), tc.warns)
				}
			})
		})
	}
}

// TestWatchdogInterval_L2: WATCHDOG_USEC is the whole interval; the
// keep-alives go at half of it.
func TestWatchdogInterval_L2(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	every, enabled, err := WatchdogInterval()
	if every != 30*time.Second || !enabled || err != nil {
		t.Errorf("WatchdogInterval() = %v, %v, %v; want 30s, true, nil", every, enabled, err)
	}
}
