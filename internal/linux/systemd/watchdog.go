package systemd

import (
	"context"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// WatchdogInterval returns the time within which systemd expects
// WATCHDOG=1 from this process (WatchdogSec= in the unit, passed as
// $WATCHDOG_USEC). enabled is false with a nil error when no watchdog is
// asked of this process (not run by systemd, no WatchdogSec=, or
// $WATCHDOG_PID names another process); err says the setting is there but
// cannot be read.
func WatchdogInterval() (every time.Duration, enabled bool, err error) {
	every, err = daemon.SdWatchdogEnabled(false)
	if err != nil {
		return 0, false, err
	}
	return every, every > 0, nil
}

// Watchdog keeps systemd's watchdog fed until ctx ends: at half the
// interval it calls alive and, once alive returns, sends WATCHDOG=1. An
// alive that blocks (a daemon stuck on its lock) stops the keep-alives,
// and systemd restarts the service. Without a watchdog it returns at
// once; a setting it cannot read is logged, as a warning, and no
// keep-alives are sent.
func (n *Notifier) Watchdog(ctx context.Context, alive func()) {
	every, enabled, err := WatchdogInterval()
	if err != nil {
		n.log.Warn("the service watchdog setting cannot be read; not sending keep-alives", "err", err)
		return
	}
	if !enabled {
		return
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			alive()
			n.Notify(StateWatchdog)
		}
	}
}
