// Package doctor checks a Collie installation, one row per check, and says
// for every row that is not ok exactly what to run to fix it (spec L4).
//
// The checks are a table (see [Names]); each is a small function of an
// [Env], which holds the paths and the outside world (the user manager,
// logind, journald, the daemon) behind small interfaces, so that tests can
// give fakes and the output format has golden files.
package doctor

import (
	"context"
	"fmt"
	"slices"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/cli"
)

// Status is a row's outcome.
type Status string

// Statuses. Only Fail makes `collie doctor` exit with status 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
	// Skip is a check that could not run, such as one that needs the
	// daemon while it is not running.
	Skip Status = "skip"
)

// Row is one line of the report.
type Row struct {
	Check   string `json:"check"`             // the check's name, as --check takes it
	Subject string `json:"subject,omitempty"` // what it is about, when a check has several rows
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"` // what to run, for every row that is not ok
}

// Env is what the checks look at. Nil interfaces mean "not available", and
// the rows that need them say so.
type Env struct {
	Paths    config.Paths
	PathsErr error // why Paths could not be worked out; the other rows then skip
	UID      int
	User     string // the user's name, for fixes such as loginctl enable-linger

	Self    Binary                 // this collie
	Agent   func() (Binary, error) // finds collie-agent and asks its version
	Version string                 // this collie's version

	// Systemd connects to the user's service manager.
	Systemd func(context.Context) (Systemd, error)
	// Logind asks logind whether the user lingers.
	Logind func(ctx context.Context, uid int) (linger bool, err error)
	// Journald reports whether journald takes entries.
	Journald func() error
	// Daemon is the running daemon's control socket.
	Daemon Daemon
	// Probe connects to a durable agent's socket as the bridge does (walk,
	// connect, peer credentials, hello) and returns the agent's name.
	Probe func(ctx context.Context, socket string) (agent string, err error)
	// Dial connects to a TCP address (the device API) and hangs up.
	Dial func(ctx context.Context, addr string) error
	// Fetch GETs an https:// URL as a phone would, with this machine's
	// certificate authorities: the bridge's /healthz through public_url.
	Fetch func(ctx context.Context, url string) (status int, body []byte, err error)
	// AgentCheck runs collie-agent's own config check for the agent
	// NAME (collie-agent --check-config --name NAME): the message when
	// the config is valid, the reason (file, line, setting) when not.
	AgentCheck func(ctx context.Context, name string) (string, error)
	// Push asks the running daemon about its pushes (control.Client).
	Push func(ctx context.Context) (control.PushStatus, error)
	// AgentSessions asks the running daemon for the agent platform's
	// sessions (control.Client).
	AgentSessions func(ctx context.Context) ([]control.AgentSession, error)

	// Clients are the coding agents' settings (clients.go); nil: no rows.
	Clients *Clients

	agents map[string]*agentState // worked out once per run (agent)
}

// Binary is a program and the version it reports.
type Binary struct {
	Path, Version string
}

// Systemd is the part of the user's service manager the checks use.
type Systemd interface {
	// Unit returns the state of a unit. For a template (a name with "@."),
	// only Path and FileState are set.
	Unit(ctx context.Context, name string) (Unit, error)
	Close()
}

// Unit is a unit as the user manager sees it.
type Unit struct {
	Name      string
	Load      string // LoadState: loaded, not-found, …
	Active    string // ActiveState: active, inactive, failed, …
	Sub       string // SubState: running, listening, dead, …
	FileState string // UnitFileState: enabled, disabled, static, …
	Path      string // FragmentPath: where the unit file is
}

// Daemon is the control API of a running daemon (control.Client).
type Daemon interface {
	Agents(ctx context.Context) ([]view.AgentStatus, error)
}

// check is one entry of the table: a name for --check and the function
// that makes its rows.
type check struct {
	name string
	run  func(context.Context, *Env) []Row
}

// checks run in this order; the report lists rows in the same order.
var checks = []check{
	{"binary", checkBinary},
	{"config", checkConfig},
	{"sources", checkSources},
	{"durable-socket", checkDurableSockets},
	{"agent-config", checkAgentConfigs},
	{"desk", checkDesk},
	{"state-dir", checkStateDir},
	{"audit-log", checkAuditLog},
	{"units", checkUnits},
	{"linger", checkLinger},
	{"journald", checkJournald},
	{"daemon", checkDaemon},
	{"device-listener", checkDeviceListener},
	{"public_url", checkPublicURL},
	{"push", checkPush},
	{"config-reload", checkReload},
	{"agent-login", checkAgentLogin},
	{"coding-agents", checkCodingAgents},
	{"runs", checkRuns},
}

// Names lists the checks, in the order they run.
func Names() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.name
	}
	return names
}

// Run runs every check, or only those named in only (in the table's
// order, each once) when it names any.
func Run(ctx context.Context, e *Env, only ...string) ([]Row, error) {
	for _, name := range only {
		if !slices.Contains(Names(), name) {
			if s := cli.Suggest(name, Names()); s != "" {
				return nil, fmt.Errorf("there is no check %q; did you mean %s? The checks are: %s", name, s, joinNames())
			}
			return nil, fmt.Errorf("there is no check %q; the checks are: %s", name, joinNames())
		}
	}
	var rows []Row
	for _, c := range checks {
		if len(only) > 0 && !slices.Contains(only, c.name) {
			continue
		}
		for _, r := range c.run(ctx, e) {
			r.Check = c.name
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func joinNames() string {
	s := ""
	for i, n := range Names() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// Failed counts the rows that failed.
func Failed(rows []Row) int {
	n := 0
	for _, r := range rows {
		if r.Status == Fail {
			n++
		}
	}
	return n
}

// Row constructors, for the checks.

func ok(msg string, a ...any) Row { return Row{Status: OK, Message: fmt.Sprintf(msg, a...)} }

func warn(fix, msg string, a ...any) Row {
	return Row{Status: Warn, Message: fmt.Sprintf(msg, a...), Fix: fix}
}

func fail(fix, msg string, a ...any) Row {
	return Row{Status: Fail, Message: fmt.Sprintf(msg, a...), Fix: fix}
}

func skip(fix, msg string, a ...any) Row {
	return Row{Status: Skip, Message: "skipped: " + fmt.Sprintf(msg, a...), Fix: fix}
}

func (r Row) about(subject string) Row { r.Subject = subject; return r }

// noPaths is the row of a check that needs the paths when they are not
// known; the config row says why.
func noPaths(e *Env) []Row {
	return []Row{skip("fix the config row first", "the XDG folders are not known (see the config row)")}
}

// loadConfig reads config.toml for a row that needs it, and its path; a
// row that cannot be judged without it is skipped, pointing at the config
// row, which says what is wrong.
func loadConfig(e *Env) (config.File, string, []Row) {
	if e.PathsErr != nil {
		return config.File{}, "", noPaths(e)
	}
	path := e.Paths.ConfigFile()
	cfg, _, err := config.Load(path)
	if err != nil {
		return config.File{}, path, []Row{skip("fix the config row first", "config.toml cannot be read (see the config row)")}
	}
	return cfg, path, nil
}
