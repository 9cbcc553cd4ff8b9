package doctor

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/linux/systemd"
)

// startDaemon and restartDaemon are how the user starts the daemon.
const (
	startDaemon   = "systemctl --user start collie.service"
	restartDaemon = "systemctl --user restart collie.service"
)

// DaemonDown says why the daemon is not running and what to do, for every
// command that finds it so (collie show, doctor's daemon row): the reason
// it gave as it stopped on an error, from the file it leaves in its state
// folder (systemd.FailureFile), such as the config file's line and
// setting; without one, how to start it. failed says the daemon stopped
// on an error: starting it again fails the same way until the cause is
// fixed, so "start it" alone would send the user in a loop.
func DaemonDown(p config.Paths) (msg, fix string, failed bool) {
	path := systemd.FailureFile(p.State)
	f, found, err := systemd.ReadFailure(path)
	switch {
	case err != nil:
		return "the daemon is not running, and the reason it left cannot be read: " + err.Error(),
			"see why: journalctl --user -u collie.service -p warning; then: " + restartDaemon, true
	case !found:
		return "the daemon is not running", startDaemon, false
	}
	what := "it stopped on an error at " + f.Time.Local().Format(time.DateTime)
	if f.Starting {
		what = "its last start failed at " + f.Time.Local().Format(time.DateTime)
	}
	reason := f.Message
	for _, p := range []string{"the daemon cannot start: ", "the daemon stopped: "} {
		reason = strings.TrimPrefix(reason, p)
	}
	msg = fmt.Sprintf("the daemon is not running; %s: %s", what, reason)
	if fi, err := os.Stat(p.ConfigFile()); err == nil && fi.ModTime().After(f.Time) {
		return msg + " (" + p.ConfigFile() + " changed since)", "start it again to see whether the change fixed it: " + restartDaemon, true
	}
	fix = f.Hint
	if fix == "" {
		fix = "fix what the message says"
	}
	return msg, fix + "; then: " + restartDaemon, true
}

// notRunning is the row of a check that needs the running daemon when it
// is not running: a skip whose fix starts it, or, when it stopped on an
// error, points to the daemon row, which says why.
func notRunning(e *Env) Row {
	if e.PathsErr == nil {
		if _, fix, failed := DaemonDown(e.Paths); failed {
			return skip("see the daemon row: "+fix, "the daemon is not running")
		}
	}
	return skip(startDaemon, "the daemon is not running")
}
