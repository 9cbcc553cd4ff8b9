package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/bridge"
	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/linux/systemd"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
)

func cmdDaemon(ctx context.Context, e *env, args []string) error {
	// Signals first: a HUP or TERM from now on is the daemon's to handle.
	ctx, hup, stop := catchSignals(ctx)
	defer stop()
	fs := newFlags("collie daemon", e)
	debug := fs.Bool("debug", false, "log debug lines too")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return fmt.Errorf("%w: %w", errCannotStart, err)
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	err = runDaemon(ctx, e, hup, paths, level)
	if err != nil {
		keepFailure(e, paths, err, time.Now())
	}
	return err
}

// runDaemon reads config.toml and runs the bridge.
func runDaemon(ctx context.Context, e *env, hup <-chan os.Signal, paths config.Paths, level slog.Level) error {
	// A key config.toml does not know is refused rather than ignored.
	cfg, _, err := config.Load(paths.ConfigFile())
	if err != nil {
		return fmt.Errorf("%w: %w", errCannotStart, err)
	}
	return runBridge(ctx, e, hup, paths, deviceListen(cfg.Devices), &cfg.Push, cfg.Agents, level)
}

// errCannotStart is in every error that stops the daemon before it is
// ready: it cannot start, and restarting it fails the same way.
var errCannotStart = errors.New("the daemon cannot start")

// keepFailure saves why the daemon stops on err in its state folder
// (systemd.FailureFile), so that collie show and collie doctor, which find
// it not running, say why and what to fix rather than "start it", which
// would fail the same way. The journal has it too (report).
func keepFailure(e *env, paths config.Paths, err error, now time.Time) {
	f := systemd.Failure{Time: now, Starting: errors.Is(err, errCannotStart), Message: err.Error(), Hint: hint.Of(err)}
	if werr := systemd.WriteFailure(systemd.FailureFile(paths.State), f); werr != nil {
		fmt.Fprintf(e.stderr, "collie: the reason the daemon stops is not kept for collie show and collie doctor: %v\n", werr)
	}
}

// catchSignals catches SIGINT and SIGTERM (they end the returned context)
// and SIGHUP (sent on the returned channel) from this moment on. Callers
// call it before anything else, so that a signal that comes while the
// daemon is still starting neither kills it (SIGHUP's default action) nor
// reaches a bridge that is not running yet: a HUP waits in the channel
// until the bridge is ready (see reloadOnHUP).
func catchSignals(ctx context.Context) (context.Context, <-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	return ctx, hup, func() { stop(); signal.Stop(hup) }
}

// deviceListen turns [devices] into the device API's settings; nil when
// it is off.
func deviceListen(d config.Devices) *device.ListenConfig {
	addr, on := d.DeviceListen()
	if !on {
		return nil
	}
	lc := &device.ListenConfig{Addr: addr, TLS: d.TLS, CertFile: d.TLSCert, KeyFile: d.TLSKey, ProxyHeaders: d.ProxyHeaders}
	if o, ok, _ := d.Public(); ok { // config.Load checked it
		lc.PublicURL = o.String()
	}
	return lc
}

// runBridge runs the daemon until ctx ends (SIGINT or SIGTERM, caught by
// catchSignals); a SIGHUP on hup reloads config.toml (what it can apply
// without a restart, see liveConfig) and sources.json once it is running.
// An error that stops it before it is ready says "cannot start", one after
// "stopped"; main reports either at PRIORITY=3 (journald.Fatal).
// pushCfg is [push]; nil sends no pushes (collie demo). agents is
// [agents].
func runBridge(ctx context.Context, e *env, hup <-chan os.Signal, paths config.Paths, devices *device.ListenConfig, pushCfg *config.Push, agents config.Agents, level slog.Level) error {
	log := journald.NewLogger("collie", e.stderr, level)
	n := systemd.NewNotifier(log)
	cannotStart := func(err error) error { return fmt.Errorf("%w: %w", errCannotStart, err) }
	content, err := audit.ParseContent(e.getenv("COLLIE_AUDIT_CONTENT"))
	if err != nil {
		return cannotStart(err)
	}
	auditLog, opened, err := audit.Open(audit.Options{Dir: paths.State, Content: content, Anchor: anchorToJournal(log), OnRepair: warnRepair(log)})
	if err != nil {
		return cannotStart(fmt.Errorf("open the audit log: %w", err))
	}
	defer auditLog.Close()
	for _, t := range opened.Tightened {
		log.Warn("an audit file was readable by others; set its mode to 0600", "path", t.Path, "old_mode", fmt.Sprintf("%04o", t.Was.Perm()))
	}
	for _, r := range opened.Repaired {
		log.Warn("the audit log was repaired at start", "path", r.Path, "offset", r.Offset, "reason", r.What)
	}
	var b *bridge.Bridge
	opts := bridge.Options{
		Paths:   paths,
		UID:     os.Getuid(),
		Log:     log,
		Notify:  n.Notify,
		Devices: devices,
		Audit:   bridge.Auditor{Log: auditLog, Logger: log},
		Agents:  agents,
	}
	var live *liveConfig // config.toml as applied; a SIGHUP reloads it
	if pushCfg != nil {
		pushes := setupPush(ctx, e, paths, *pushCfg, log, func() string { return b.WebURL() }, devices != nil)
		defer pushes.close()
		live = newLiveConfig(paths.ConfigFile(), e, log, pushes, devices, *pushCfg, agents)
		opts.Push, opts.PushOff, opts.WebPush, opts.Config = pushes.d, pushes.Off, pushes.web, live.State
	}
	b = bridge.New(opts)
	// Each keep-alive takes the bridge's lock (Agents): a bridge stuck on
	// it stops them, and systemd restarts the daemon (WatchdogSec=).
	go n.Watchdog(ctx, func() { b.Agents() })
	go reloadOnHUP(ctx, hup, n.Ready(), reloadAll(ctx, live, b.Reload), log)
	go forgetFailure(ctx, n.Ready(), paths, log)
	if err := b.Run(ctx); err != nil {
		select {
		case <-n.Ready():
			return fmt.Errorf("the daemon stopped: %w", err)
		default:
			return cannotStart(err)
		}
	}
	log.Info("collie daemon stopped")
	return nil
}

// forgetFailure removes the reason the daemon stopped last time once it is
// ready: it runs, and collie show no longer says it failed.
func forgetFailure(ctx context.Context, ready <-chan struct{}, paths config.Paths, log *slog.Logger) {
	select {
	case <-ctx.Done():
		select {
		case <-ready: // it was ready, and is stopping already
		default:
			return
		}
	case <-ready:
	}
	if err := systemd.ClearFailure(systemd.FailureFile(paths.State)); err != nil {
		log.Warn("the reason the daemon stopped last time is kept: collie show and collie doctor may still show it", "err", err)
	}
}

// reloadOnHUP calls reload for every SIGHUP on hup, from the moment ready
// is closed (the bridge said READY=1) until ctx ends. A HUP that came
// earlier waited in hup and is acted on then: the bridge read sources.json
// as it started, but perhaps before the change the HUP was sent for.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, ready <-chan struct{}, reload func() error, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-ready:
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := reload(); err != nil {
				log.Error("reload failed; keeping the agents as they were", "err", err)
				continue
			}
			log.Info("sources.json reloaded")
		}
	}
}
