// Package systemd is Collie's side of the service manager: telling it the
// daemon's state (sd_notify: READY=1, STATUS=, STOPPING=1), keeping its
// watchdog fed, and asking the user's manager and logind over D-Bus, as
// collie doctor does. Logging to journald is in the subpackage journald.
//
// As in go-systemd, whose daemon and dbus packages this wraps, a call that
// has no service manager to talk to says so apart from a failure: Notify
// returns (false, nil) when the process was not started by systemd, and
// (false, err) when it was and the message was lost.
package systemd

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/daemon"
)

// The states a daemon sends; see sd_notify(3). Several may be sent at
// once, one a line.
const (
	StateReady    = daemon.SdNotifyReady    // READY=1: started; a Type=notify unit is active from now on
	StateStopping = daemon.SdNotifyStopping // STOPPING=1: shutting down
	StateWatchdog = daemon.SdNotifyWatchdog // WATCHDOG=1: still alive (WatchdogSec=)
)

// Status returns the STATUS= line for text, which systemctl status shows.
// A line break in text would end the line and start another assignment,
// so each is replaced with a space.
func Status(text string) string {
	return "STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(text)
}

// Notify sends state (one or more lines of sd_notify(3) assignments) to
// the service manager at $NOTIFY_SOCKET. sent is false with a nil error
// when there is no $NOTIFY_SOCKET (the process was not started by
// systemd, or not as a notify service); err says why a message for a
// manager that is there was lost.
func Notify(state string) (sent bool, err error) {
	return daemon.SdNotify(false, state)
}

// Notifier sends a daemon's states and logs the first failure, once, at
// error: a READY=1 that never arrives otherwise shows only as systemd's
// start timeout, a lost WATCHDOG=1 only as a restart. Later failures are
// not logged again, so a watchdog that keeps failing does not flood the
// journal. Its Notify method has the shape bridge.Options.Notify takes.
type Notifier struct {
	log    *slog.Logger
	send   func(state string) (sent bool, err error) // Notify, or a test's
	failed sync.Once

	ready     chan struct{} // closed at the first READY=1
	readyOnce sync.Once
}

// NewNotifier returns a Notifier that sends with Notify and logs to log.
func NewNotifier(log *slog.Logger) *Notifier { return newNotifier(log, Notify) }

func newNotifier(log *slog.Logger, send func(string) (bool, error)) *Notifier {
	return &Notifier{log: log, send: send, ready: make(chan struct{})}
}

// Notify sends state. Without $NOTIFY_SOCKET (not run by systemd) there
// is nothing to send and nothing is logged.
func (n *Notifier) Notify(state string) {
	if hasLine(state, StateReady) {
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

// Ready is closed once the daemon has said READY=1 (whether or not
// systemd was there to hear it).
func (n *Notifier) Ready() <-chan struct{} { return n.ready }

// hasLine reports whether one of state's lines is line.
func hasLine(state, line string) bool {
	for l := range strings.SplitSeq(state, "\n") {
		if l == line {
			return true
		}
	}
	return false
}
