package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/collie-linux/collie/internal/agent/callercheck"
	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/durable/grants"
	"github.com/collie-linux/collie/internal/agent/runcmd"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/cli/version"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// serveOptions are the agent's own flags.
type serveOptions struct {
	name, socket, cfgPath string
	check, version        bool
}

// serveFlags is the agent's FlagSet, its flags set into o.
func serveFlags(o *serveOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("collie-agent", flag.ContinueOnError)
	fs.StringVar(&o.name, "name", "demo", "the agent's `name` (the instance of collie-agent@NAME)")
	fs.StringVar(&o.socket, "socket", "", "the socket `path` when not socket-activated (default $XDG_RUNTIME_DIR/desk/NAME.sock)")
	fs.StringVar(&o.cfgPath, "config", "", "the config `file` (default $XDG_CONFIG_HOME/collie-agent/NAME.toml)")
	fs.BoolVar(&o.check, "check-config", false, "check the config file as the agent does at start (syntax, settings, tokens, TLS files) and exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	return fs
}

// cmdServe is the agent itself: it serves until SIGTERM or SIGINT, or
// with --check-config checks its config and exits.
func cmdServe(_ context.Context, e *env, args []string) error {
	// Signals first: from here on, a HUP or TERM is the agent's to handle,
	// also while it is still starting (see catchSignals).
	sig := catchSignals()
	defer sig.stop()
	var o serveOptions
	fs := serveFlags(&o)
	rest, err := cli.Parse(fs, args, func() { writeUsage(e.stdout, fs) })
	e.name = o.name
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(e.stdout, "collie-agent", version.String())
		return nil
	}
	if len(rest) > 0 {
		return unexpected(rest[0])
	}
	// The instance name becomes a file name: the rule the bridge's
	// names follow.
	if !wire.ValidName(o.name) {
		return &cli.UsageError{Err: hint.Errorf(wire.NameRule, "the name %q is not valid", o.name)}
	}
	path := configPath(o.cfgPath, o.name, os.Getenv)
	if o.check {
		if err := configExists(path, o.cfgPath != "", o.name); err != nil {
			return err
		}
		if _, err := prepare(path, o.name, os.Getenv); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s is valid\n", path)
		return nil
	}
	log := journald.NewLogger("collie-agent", e.stderr, slog.LevelInfo).With("agent", o.name)
	return serve(sig, o.name, o.socket, path, log)
}

// signals are the agent's: SIGINT and SIGTERM stop it, SIGHUP reloads its
// config. They are caught before anything else, so that a signal that
// comes while the agent starts neither kills it (SIGHUP's default action)
// nor is lost: a HUP waits in the channel until the agent serves.
type signals struct {
	stop func()
	hup  chan os.Signal
	term chan os.Signal
}

func catchSignals() *signals {
	s := &signals{hup: make(chan os.Signal, 1), term: make(chan os.Signal, 1)}
	signal.Notify(s.hup, syscall.SIGHUP)
	signal.Notify(s.term, os.Interrupt, syscall.SIGTERM)
	s.stop = func() { signal.Stop(s.hup); signal.Stop(s.term) }
	return s
}

// context ends when SIGINT or SIGTERM comes, or came already.
func (s *signals) context() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-s.term:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// exampleConfig is the example config the package ships.
const exampleConfig = "/usr/share/doc/collie/examples/collie-agent.toml"

// configExists is --check-config's first question: a file that does not
// exist is not "valid", whatever the agent would do without it. given
// says the path came from --config.
func configExists(path string, given bool, name string) error {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return hint.Errorf("make it readable by you", "cannot check %s: %v", path, err)
	case given:
		return hint.Errorf("give the path of a file that exists, or write one there (see collie-agent(1); an example: "+exampleConfig+")",
			"%s does not exist, so there is no config to check", path)
	}
	return hint.Errorf("to configure it, write the file (see collie-agent(1); an example: "+exampleConfig+"), or give another with --config FILE",
		"there is no config file at %s: collie-agent %s starts with the demo (one conversation, one yes/no question)", path, name)
}

// configPath is --config, or $XDG_CONFIG_HOME/collie-agent/NAME.toml.
func configPath(flagValue, name string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		dir = filepath.Join(getenv("HOME"), ".config")
	}
	return filepath.Join(dir, "collie-agent", name+".toml")
}

// statePath is where the agent keeps its always-allow grants:
// $XDG_STATE_HOME/collie-agent/NAME/grants.json.
func statePath(name string, getenv func(string) string) string {
	dir := getenv("XDG_STATE_HOME")
	if dir == "" {
		dir = filepath.Join(getenv("HOME"), ".local", "state")
	}
	return filepath.Join(dir, "collie-agent", name, "grants.json")
}

// prepared is what the agent reads and checks before it serves.
type prepared struct {
	cfg    Config
	tokens durable.Tokens
}

// prepare loads and checks the config and everything it names (the token
// transport's tokens and TLS files), exactly as the agent does at start,
// without listening or running anything: --check-config runs it, and so
// does collie doctor through it. Errors name the file, the line and the
// setting where there is one.
func prepare(cfgPath, name string, getenv func(string) string) (prepared, error) {
	cfg, err := loadConfig(cfgPath, name)
	if err != nil {
		return prepared{}, err
	}
	p := prepared{cfg: cfg}
	if cfg.HTTPS != nil {
		if p.tokens, err = loadTokens(cfg.HTTPS, cfgPath, getenv); err != nil {
			return prepared{}, fmt.Errorf("%s: %w", cfgPath, err)
		}
		if err := checkHTTPS(cfg.HTTPS); err != nil {
			return prepared{}, fmt.Errorf("%s: %w", cfgPath, err)
		}
	}
	return p, nil
}

func serve(sig *signals, name, socket, cfgPath string, log *slog.Logger) error {
	p, err := prepare(cfgPath, name, os.Getenv)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	if err := serveWith(sig, p, name, socket, cfgPath, log); err != nil {
		return fmt.Errorf("stopped: %w", err)
	}
	return nil
}

func serveWith(sig *signals, p prepared, name, socket, cfgPath string, log *slog.Logger) error {
	cfg := p.cfg
	var err error
	// C3: on by default; where it cannot work the agent does not start
	// unless the config turns it off explicitly.
	transport := durable.Transport{Unchecked: cfg.CallerCheck == "off"}
	var checker *callercheck.Checker
	if !transport.Unchecked {
		checker, err = callercheck.New()
		if err != nil {
			return err
		}
		transport.Check = checker
	}
	if socket == "" {
		run := os.Getenv("XDG_RUNTIME_DIR")
		if run == "" {
			return hint.New("XDG_RUNTIME_DIR is not set", "give --socket PATH, or run the agent under systemd --user")
		}
		socket = filepath.Join(run, "desk", name+".sock")
	}
	listenFDs := os.Getenv("LISTEN_FDS") // read before activation unsets it
	l, activated, err := durable.Listen(socket)
	if err != nil {
		return err
	}
	defer l.Close()
	srv, err := durable.NewServer(wire.Hello{Agent: name, Software: "collie-agent " + version.String()}, log)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	a := &agent{name: name, socket: l.Addr().String(), home: home, getenv: os.Getenv, log: log, runs: map[*runcmd.Run]runInfo{}}
	b, err := board.New(srv, board.Options{
		Space:       wire.Space{ID: "main", Title: name},
		Tab:         wire.Space{ID: "main", Title: "Main"},
		Main:        struct{ ID, Title string }{"main", cfg.Title},
		AllowAlways: cfg.Always.Enabled, AlwaysFor: cfg.Always.duration,
		Grants: grants.File(statePath(name, os.Getenv)),
		Hooks:  a.hooks(),
		Log:    log,
	})
	if err != nil {
		return err
	}
	defer b.Stop()
	a.board = b
	if err := a.apply(cfg); err != nil {
		return err
	}
	b.AppendItem("main", wire.Item{Kind: wire.KindText, Role: "agent",
		Text: "collie-agent " + name + " is running. Answer its questions from a paired device."})
	if q := cfg.Question; q != nil {
		if _, err := b.Pose("main", wire.AskRequest{Kind: wire.AskYesNo, Title: q.Title, Rationale: q.Rationale, ToolCall: name + "-1"}); err != nil {
			return fmt.Errorf("%s: the question: %w", cfgPath, err)
		}
	}
	checkDesc := describeCheck(cfg, "", false)
	if checker != nil {
		checkDesc = describeCheck(cfg, checker.Cgroup(), checker.PeerPidfd())
		if checker.Cgroup() == "" {
			log.Warn("the caller check refuses every write: the agent runs in a root cgroup, where it cannot tell the tools it started from other processes; run it as collie-agent@NAME.service, or set CallerCheck = \"off\" in the config")
		}
	} else {
		log.Warn("the caller check is off (CallerCheck = \"off\"): any process of this user, the agent's own commands included, can answer its questions")
	}
	log.Info("collie-agent serving", "socket", l.Addr().String(), "activated", activated, "listen_fds", listenFDs,
		"config", cfgPath, "caller_check", checkDesc, "belt", len(cfg.Belt), "starters", len(cfg.Starters), "always_allow", cfg.Always.Enabled)

	ctx, stop := sig.context()
	defer stop()
	remoteDone := make(chan error, 1)
	if cfg.HTTPS != nil {
		rl, err := serveRemote(ctx, srv, cfg, p.tokens, log, remoteDone)
		if err != nil {
			return err
		}
		defer rl.Close()
	} else {
		close(remoteDone)
	}
	go a.reloadOnHUP(ctx, sig.hup, cfgPath, cfg)
	err = srv.ServeTransport(ctx, l, transport)
	stop()
	if rerr := <-remoteDone; err == nil {
		err = rerr
	}
	a.stopAll()
	return err
}

// reloadOnHUP reads the config again on SIGHUP. A config that fails its
// checks is refused whole, with the reason in the log, and the agent keeps
// serving with the one it has: nothing is half applied.
func (a *agent) reloadOnHUP(ctx context.Context, hup <-chan os.Signal, path string, current Config) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		cfg, err := loadConfig(path, a.name)
		if err != nil {
			a.log.Error("the changed config is refused; the agent keeps serving with the previous one", "err", err)
			continue
		}
		if cfg.CallerCheck != current.CallerCheck || cfg.Always != current.Always {
			a.log.Warn("CallerCheck and [always] take effect when the agent starts again; restart it to apply them")
		}
		if err := a.apply(cfg); err != nil {
			a.log.Error("the changed config is refused; the agent keeps serving with the previous one", "err", err)
			continue
		}
		a.log.Info("config reloaded", "config", path, "belt", len(cfg.Belt), "starters", len(cfg.Starters))
	}
}

// serveRemote serves the token transport beside the socket (K1–K7). It
// has no caller check (K3), so "always allow" is not offered there.
func serveRemote(ctx context.Context, srv *durable.Server, cfg Config, tokens durable.Tokens, log *slog.Logger, done chan<- error) (net.Listener, error) {
	l, url, err := listenHTTPS(cfg.HTTPS)
	if err != nil {
		return nil, err
	}
	if cfg.Always.Enabled {
		log.Warn("always allow is offered on the Unix socket only: the token transport has no caller check, so a bridge over HTTPS sees only Allow and Deny")
	}
	log.Info("collie-agent serving the token transport", "url", url, "next_token", tokens.Next != "")
	go func() { done <- srv.ServeTransport(ctx, l, durable.Transport{Remote: true, Tokens: tokens}) }()
	return l, nil
}
