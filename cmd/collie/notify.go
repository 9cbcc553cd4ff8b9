package main

import (
	"log/slog"
	"strings"
	"sync"
)

// notifier sends the daemon's state to systemd (sd_notify) and logs the
// first failure, once, at PRIORITY=3: a READY=1 that never arrives
// otherwise shows only as systemd's start timeout, a lost WATCHDOG=1 only
// as a restart. Later failures are not logged again, so a watchdog that
// keeps failing does not flood the journal.
type notifier struct {
	log    *slog.Logger
	send   func(state string) (sent bool, err error) // daemon.SdNotify
	failed sync.Once

	ready     chan struct{} // closed at the first READY=1
	readyOnce sync.Once
}

func newNotifier(log *slog.Logger, send func(string) (bool, error)) *notifier {
	return &notifier{log: log, send: send, ready: make(chan struct{})}
}

// Notify sends state. Without $NOTIFY_SOCKET (not run by systemd) there is
// nothing to send and nothing is logged.
func (n *notifier) Notify(state string) {
	if strings.HasPrefix(state, "READY=1") {
		n.readyOnce.Do(func() { close(n.ready) })
	}
	if _, err := n.send(state); err != nil {
		n.failed.Do(func() {
			first, _, _ := strings.Cut(state, "\n")
			n.log.Error("cannot tell systemd the daemon's state (sd_notify); a lost READY=1 makes systemd time the start out, a lost WATCHDOG=1 restarts the daemon: check $NOTIFY_SOCKET and NotifyAccess= in collie.service; further failures are not logged",
				"state", first, "err", err)
		})
	}
}

// Ready is closed once the bridge has said READY=1.
func (n *notifier) Ready() <-chan struct{} { return n.ready }
