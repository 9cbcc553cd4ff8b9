package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/sources"
)

// askTimeout bounds each question to the user manager, logind or the
// daemon.
const askTimeout = 5 * time.Second

// managerFix is the fix when the user manager cannot be asked.
func managerFix(e *Env) string {
	return "run collie doctor in your login session, where systemctl --user works; on a headless machine first run: loginctl enable-linger " + e.User
}

// checkUnits asks the user manager about collie.service, the agent
// template, and the socket unit of each agent attached in the desk folder.
func checkUnits(ctx context.Context, e *Env) []Row {
	if e.Systemd == nil {
		return []Row{warn(managerFix(e), "cannot check the user units: no systemd user manager to ask")}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	sd, err := e.Systemd(cctx)
	if err != nil {
		return []Row{warn(managerFix(e), "cannot ask the systemd user manager over D-Bus: %v", err)}
	}
	defer sd.Close()

	daemon := serviceRow(cctx, sd, "collie.service")
	if daemon.Status == Fail && e.PathsErr == nil {
		// Started again, it fails the same way: the daemon row says why.
		if _, fix, failed := DaemonDown(e.Paths); failed {
			daemon.Fix = "see the daemon row: " + fix
		}
	}
	rows := []Row{daemon, templateRow(cctx, sd, "collie-agent@.socket", "collie-agent@.service")}
	if e.PathsErr == nil {
		if f, err := sources.Load(e.Paths.Sources()); err == nil {
			for _, s := range f.Sources {
				if u := unitOf(e, s.Socket); u != "" && s.Transport() == "socket" {
					rows = append(rows, serviceRow(cctx, sd, u), agentServiceRow(cctx, sd, e, s.Name))
				}
			}
		}
	}
	return rows
}

// serviceRow checks that a unit is installed, enabled and active.
func serviceRow(ctx context.Context, sd Systemd, name string) Row {
	u, err := sd.Unit(ctx, name)
	if err != nil {
		return warn("systemctl --user status "+name, "cannot ask the user manager about %s: %v", name, err).about(name)
	}
	enabled := u.FileState == "enabled" || u.FileState == "enabled-runtime" || u.FileState == "linked" || u.FileState == "alias"
	active := u.Active == "active" || u.Active == "reloading"
	switch {
	case u.Load == "not-found" || u.Load == "":
		if strings.HasPrefix(name, "collie-agent@") {
			return fail(installFix, "%s cannot be loaded: the template collie-agent@.socket is not installed", name).about(name)
		}
		return fail(installFix+"; then: systemctl --user daemon-reload", "%s is not installed", name).about(name)
	case u.Load != "loaded":
		return fail("systemctl --user status "+name+" shows why", "%s is %s", name, u.Load).about(name)
	case !enabled && !active:
		return fail("systemctl --user enable --now "+name, "%s is installed (%s) but %s and %s", name, u.Path, orNone(u.FileState), u.Active).about(name)
	case !active:
		fix := "systemctl --user start " + name
		if u.Active == "failed" {
			fix = "systemctl --user restart " + name + "; if it fails again, see why: journalctl --user -u " + name + " -p warning"
			if agent, ok := strings.CutSuffix(strings.TrimPrefix(name, "collie-agent@"), ".socket"); ok && agent != name {
				// A socket stops when its service keeps failing; the
				// reason is in the service's journal.
				fix = "see why: " + agentJournal(agent) + "; then: " + restartAgent(agent)
			}
		}
		return fail(fix, "%s is enabled but %s (%s)", name, u.Active, u.Sub).about(name)
	case !enabled:
		return warn("systemctl --user enable "+name, "%s is active but %s: it will not start at your next login", name, orNone(u.FileState)).about(name)
	}
	return ok("%s is installed (%s), enabled and active (%s)", name, u.Path, u.Sub).about(name)
}

func orNone(s string) string {
	if s == "" {
		return "not enabled"
	}
	return s
}

// templateRow checks that template units are installed (they are enabled
// per instance).
func templateRow(ctx context.Context, sd Systemd, names ...string) Row {
	var paths []string
	for _, n := range names {
		u, err := sd.Unit(ctx, n)
		if err != nil {
			return warn("systemctl --user list-unit-files 'collie-agent@*'", "cannot ask the user manager about %s: %v", n, err).about(names[0])
		}
		if u.Path == "" {
			return fail(installFix+"; then: systemctl --user daemon-reload", "%s is not installed", n).about(names[0])
		}
		paths = append(paths, u.Path)
	}
	return ok("installed: %s", strings.Join(paths, ", ")).about(names[0])
}

func checkLinger(ctx context.Context, e *Env) []Row {
	enable := "loginctl enable-linger " + e.User
	if e.Logind == nil {
		return []Row{warn("check by hand: loginctl show-user "+e.User+" -p Linger; on a headless machine, if it says no: "+enable,
			"cannot check linger: logind cannot be asked")}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	linger, err := e.Logind(cctx, e.UID)
	switch {
	case err != nil:
		return []Row{warn("check by hand: loginctl show-user "+e.User+" -p Linger; on a headless machine, if it says no: "+enable,
			"cannot check linger: logind is not reachable over D-Bus (%v)", err)}
	case !linger:
		return []Row{warn(enable+" (needed on a headless machine; on a desktop you may leave it off)",
			"linger is off for %s: systemd stops collie when your last session ends", e.User)}
	}
	return []Row{ok("linger is on for %s: collie keeps running while you are logged out", e.User)}
}

func checkJournald(_ context.Context, e *Env) []Row {
	if e.Journald == nil {
		return []Row{warn("see: systemctl status systemd-journald", "cannot check journald")}
	}
	if err := e.Journald(); err != nil {
		return []Row{warn("sudo systemctl start systemd-journald", "journald is not reachable (%v): collie logs to its standard error only", err)}
	}
	return []Row{ok("journald is reachable; read collie's log with: journalctl --user -u collie")}
}

// checkDaemon asks the running daemon how it sees its agents.
// A daemon that is not running is a skip, or a failure with the reason it
// gave as it stopped (DaemonDown).
func checkDaemon(ctx context.Context, e *Env) []Row {
	if e.Daemon == nil {
		return []Row{notRunning(e)}
	}
	cctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	agents, err := e.Daemon.Agents(cctx)
	if errors.Is(err, control.ErrNotRunning) {
		if msg, fix, failed := DaemonDown(e.Paths); failed {
			return []Row{fail(fix, "%s", msg)}
		}
		return []Row{notRunning(e)}
	}
	if err != nil {
		return []Row{fail("systemctl --user restart collie.service", "the daemon does not answer: %v", err)}
	}
	up := 0
	var down []string
	for _, a := range agents {
		if a.Reachable {
			up++
		} else {
			down = append(down, a.Name+": "+daemonReason(ctx, e, a.Name, a.Reason))
		}
	}
	if len(agents) == 0 {
		return []Row{ok("running; no durable agent is attached")}
	}
	msg := fmt.Sprintf("running; %d of %d durable agents reachable", up, len(agents))
	if len(down) > 0 {
		return []Row{warn("see the durable-socket rows above, or: collie durable list", "%s (%s)", msg, strings.Join(down, "; "))}
	}
	return []Row{ok("%s", msg)}
}
