package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/collie-linux/collie/internal/audit"
	"github.com/collie-linux/collie/internal/bridge"
	"github.com/collie-linux/collie/internal/config"
	"github.com/collie-linux/collie/internal/device"
	"github.com/collie-linux/collie/internal/journal"
)

func cmdDaemon(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie daemon", e)
	debug := fs.Bool("debug", false, "log debug lines too")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	// A key config.toml does not know is refused rather than ignored.
	cfg, _, err := config.Load(paths.ConfigFile())
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	return runBridge(ctx, e, paths, deviceListen(cfg.Devices), level)
}

// deviceListen turns [devices] into the device API's settings; nil when
// it is off.
func deviceListen(d config.Devices) *device.ListenConfig {
	addr, on := d.DeviceListen()
	if !on {
		return nil
	}
	return &device.ListenConfig{Addr: addr, TLS: d.TLS, CertFile: d.TLSCert, KeyFile: d.TLSKey}
}

// runBridge runs the daemon until SIGINT or SIGTERM; SIGHUP reloads
// sources.json.
func runBridge(ctx context.Context, e *env, paths config.Paths, devices *device.ListenConfig, level slog.Level) error {
	log := journal.NewLogger("collie", e.stderr, level)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	content, err := audit.ParseContent(e.getenv("COLLIE_AUDIT_CONTENT"))
	if err != nil {
		return err
	}
	auditLog, opened, err := audit.Open(audit.Options{Dir: paths.State, Content: content})
	if err != nil {
		return fmt.Errorf("open the audit log: %w", err)
	}
	defer auditLog.Close()
	for _, t := range opened.Tightened {
		log.Warn("an audit file was readable by others; set its mode to 0600", "path", t.Path, "old_mode", fmt.Sprintf("%04o", t.Was.Perm()))
	}
	if opened.Torn {
		log.Warn("the audit log ended in a line cut short, probably by a crash; it is kept, and collie audit verify reports it")
	}
	b := bridge.New(bridge.Options{
		Paths:   paths,
		UID:     os.Getuid(),
		Log:     log,
		Notify:  func(state string) { daemon.SdNotify(false, state) },
		Devices: devices,
		Audit:   bridge.Auditor{Log: auditLog, Logger: log},
	})
	go watchdog(ctx, b, log)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if err := b.Reload(); err != nil {
					log.Error("reload failed; keeping the agents as they were", "err", err)
				}
			}
		}
	}()
	if err := b.Run(ctx); err != nil {
		log.Error("collie daemon stopped", "err", err)
		return err
	}
	return nil
}

// watchdog sends WATCHDOG=1 at half the interval systemd asked for
// (WatchdogSec= in collie.service), while the bridge still answers: a
// bridge stuck on its lock stops the pings, and systemd restarts it. It
// does nothing when no watchdog is set.
func watchdog(ctx context.Context, b *bridge.Bridge, log *slog.Logger) {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		log.Warn("the service watchdog setting cannot be read; not sending keep-alives", "err", err)
		return
	}
	if every == 0 {
		return
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.Agents() // takes the bridge's lock: blocks if the bridge is stuck
			daemon.SdNotify(false, daemon.SdNotifyWatchdog)
		}
	}
}
