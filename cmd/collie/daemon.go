package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/collie-linux/collie/internal/bridge"
	"github.com/collie-linux/collie/internal/config"
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
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	return runBridge(ctx, e, paths, level)
}

// runBridge runs the daemon until SIGINT or SIGTERM; SIGHUP reloads
// sources.json.
func runBridge(ctx context.Context, e *env, paths config.Paths, level slog.Level) error {
	log := journal.NewLogger("collie", e.stderr, level)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b := bridge.New(bridge.Options{
		Paths:  paths,
		UID:    os.Getuid(),
		Log:    log,
		Notify: func(state string) { daemon.SdNotify(false, state) },
	})
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
