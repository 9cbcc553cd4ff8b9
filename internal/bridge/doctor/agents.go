package doctor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/sources"
)

// agentState is what doctor learns about an attached collie-agent@NAME:
// the agent's own config check and the user manager's view of its units.
// It is worked out once per run and shared by the rows that need it.
type agentState struct {
	checked   bool   // the config check ran
	configOK  string // its message when the config is valid
	configErr error  // its reason when not: file, line and setting

	unitsKnown      bool // the user manager answered
	socket, service Unit
}

// serviceFailed says whether collie-agent@NAME.service failed, or its
// socket stopped because the service kept failing.
func (st *agentState) serviceFailed() bool {
	return st.unitsKnown && (st.service.Active == "failed" || st.socket.Active == "failed")
}

// agentNames lists the attached agents that collie-agent@NAME units serve
// (a socket source at $XDG_RUNTIME_DIR/desk/NAME.sock).
func agentNames(e *Env) []string {
	if e.PathsErr != nil {
		return nil
	}
	f, err := sources.Load(e.Paths.Sources())
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range f.Sources {
		if s.Transport() == "socket" && unitOf(e, s.Socket) != "" {
			names = append(names, s.Name)
		}
	}
	return names
}

// agent returns the state of collie-agent@name, working it out on first
// use.
func (e *Env) agent(ctx context.Context, name string) *agentState {
	if st, ok := e.agents[name]; ok {
		return st
	}
	st := &agentState{}
	if e.AgentCheck != nil {
		cctx, cancel := context.WithTimeout(ctx, askTimeout)
		st.configOK, st.configErr = e.AgentCheck(cctx, name)
		cancel()
		st.checked = true
	}
	if e.Systemd != nil {
		cctx, cancel := context.WithTimeout(ctx, askTimeout)
		if sd, err := e.Systemd(cctx); err == nil {
			sock, err1 := sd.Unit(cctx, "collie-agent@"+name+".socket")
			svc, err2 := sd.Unit(cctx, "collie-agent@"+name+".service")
			if err1 == nil && err2 == nil {
				st.socket, st.service, st.unitsKnown = sock, svc, true
			}
			sd.Close()
		}
		cancel()
	}
	if e.agents == nil {
		e.agents = map[string]*agentState{}
	}
	e.agents[name] = st
	return st
}

// restartAgent is what to run once an agent's config or start is fixed:
// forget the failure and listen again.
func restartAgent(name string) string {
	return "systemctl --user reset-failed collie-agent@" + name + ".service collie-agent@" + name + ".socket; systemctl --user restart collie-agent@" + name + ".socket"
}

// agentJournal is where a collie-agent@NAME says why it stopped: the
// service's journal, not the socket's.
func agentJournal(name string) string {
	return "journalctl --user -u collie-agent@" + name + ".service -p err"
}

// checkAgentConfigs runs each attached collie-agent's own config check
// (collie-agent --check-config --name NAME: what the agent loads and
// checks at start), so that a typo in NAME.toml is named with its file,
// line and setting rather than seen as an agent that does not answer.
func checkAgentConfigs(ctx context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	names := agentNames(e)
	if len(names) == 0 {
		return []Row{skip("collie durable attach NAME --socket $XDG_RUNTIME_DIR/desk/NAME.sock", "no collie-agent@NAME is attached")}
	}
	var rows []Row
	for _, name := range names {
		st := e.agent(ctx, name)
		switch {
		case !st.checked:
			rows = append(rows, skip(installFix, "collie-agent is not found, so its config cannot be checked").about(name))
		case st.configErr != nil:
			rows = append(rows, fail("fix the file as the message says (collie-agent(1)), check it with: collie-agent --check-config --name "+name+"; then: "+restartAgent(name),
				"collie-agent@%s cannot start: %v", name, st.configErr).about(name))
		default:
			rows = append(rows, ok("%s", st.configOK).about(name))
		}
	}
	return rows
}

// agentServiceRow is the units row of collie-agent@NAME.service: inactive
// is fine (the socket starts it on the first connection), failed is not.
func agentServiceRow(ctx context.Context, sd Systemd, e *Env, name string) Row {
	unit := "collie-agent@" + name + ".service"
	u, err := sd.Unit(ctx, unit)
	switch {
	case err != nil:
		return warn("systemctl --user status "+unit, "cannot ask the user manager about %s: %v", unit, err).about(unit)
	case u.Active == "failed":
		why := "see why: " + agentJournal(name)
		if st := e.agent(ctx, name); st.configErr != nil {
			why = "fix its config as the agent-config row says (its log: " + agentJournal(name) + ")"
		}
		return fail(why+"; then: "+restartAgent(name), "%s failed (%s): the agent stopped as it started or ran", unit, u.Sub).about(unit)
	case u.Active == "active" || u.Active == "reloading":
		return ok("%s is running", unit).about(unit)
	}
	return ok("%s is %s; its socket starts it on the first connection", unit, u.Active).about(unit)
}

// agentDownRow refines the row of a socket whose agent does not answer
// (no socket, nothing listening, a connection cut) when it is a
// collie-agent@NAME: a failed service or a refused config is said as such,
// with the service's journal, instead of "enable the socket" and the raw
// socket error (a connection cut as the agent died).
func agentDownRow(ctx context.Context, e *Env, s sources.Source, reason string) (Row, bool) {
	if unitOf(e, s.Socket) == "" {
		return Row{}, false
	}
	st := e.agent(ctx, s.Name)
	switch {
	case st.configErr != nil:
		return fail("fix collie-agent@"+s.Name+"'s config as the agent-config row says; then: "+restartAgent(s.Name),
			"the agent does not answer: collie-agent@%s cannot start, its config is refused (see the agent-config row)", s.Name), true
	case st.serviceFailed():
		return fail("see why: "+agentJournal(s.Name)+"; then: "+restartAgent(s.Name),
			"the agent does not answer: collie-agent@%s.service failed (%s)", s.Name, st.service.Sub), true
	case st.unitsKnown && enabled(st.socket) && st.socket.Active != "active":
		return warn("systemctl --user restart collie-agent@"+s.Name+".socket; if it stops again, see why: "+agentJournal(s.Name),
			"%s: collie-agent@%s.socket is enabled but %s", reason, s.Name, st.socket.Active), true
	}
	return Row{}, false
}

func enabled(u Unit) bool {
	switch u.FileState {
	case "enabled", "enabled-runtime", "linked", "alias":
		return true
	}
	return false
}

// daemonReason is how the daemon row shows an agent that is down: for a
// collie-agent@NAME that failed, why, instead of the socket error the
// bridge saw (such as "connection reset by peer").
func daemonReason(ctx context.Context, e *Env, name, reason string) string {
	if !slices.Contains(agentNames(e), name) {
		return reason
	}
	st := e.agent(ctx, name)
	switch {
	case st.configErr != nil:
		return fmt.Sprintf("collie-agent@%s cannot start: its config is refused (see the agent-config row)", name)
	case st.serviceFailed():
		return fmt.Sprintf("collie-agent@%s.service failed (see the units rows)", name)
	}
	return reason
}

// agentCheckOutput turns collie-agent --check-config's stderr into the
// reason: its "collie-agent: error: " line, and its "collie-agent: hint: "
// line after "; " when there is one (internal/cli.WriteError).
func agentCheckOutput(stderr string) string {
	var msg, fix string
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if m, ok := strings.CutPrefix(line, "collie-agent: error: "); ok {
			msg = m
		} else if h, ok := strings.CutPrefix(line, "collie-agent: hint: "); ok {
			fix = h
		} else if m, ok := strings.CutPrefix(line, "collie-agent: "); ok {
			msg = m
		}
	}
	if fix != "" {
		return msg + "; " + fix
	}
	return msg
}
