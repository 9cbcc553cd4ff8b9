package main

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
)

// liveConfig is config.toml as the running daemon applied it. A reload
// (SIGHUP: systemctl --user reload collie) reads the file again and
// applies what it can at once, [push] (providers, previews, contact);
// what only a restart applies (the device API's listener, [agents], Web
// Push turned on or off) it names in the journal and to collie doctor. A
// file that does not load is refused whole: the daemon keeps the settings
// it runs with, and says why.
type liveConfig struct {
	path   string
	e      *env
	log    *slog.Logger
	pushes *pushSetup

	// As the daemon started: what a reload cannot change.
	devices *device.ListenConfig
	agents  config.Agents
	webOn   bool

	mu    sync.Mutex
	state control.ConfigState
}

func newLiveConfig(path string, e *env, log *slog.Logger, pushes *pushSetup, devices *device.ListenConfig, pushCfg config.Push, agents config.Agents) *liveConfig {
	return &liveConfig{path: path, e: e, log: log, pushes: pushes, devices: devices, agents: agents, webOn: webPushOn(pushCfg),
		state: control.ConfigState{ReadAt: time.Now()}}
}

func webPushOn(p config.Push) bool { return p.WebPush == nil || *p.WebPush }

// State is what collie doctor shows.
func (l *liveConfig) State() control.ConfigState {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.state
	s.Restart = append([]string(nil), s.Restart...)
	return s
}

// reload reads config.toml again and applies it.
func (l *liveConfig) reload(ctx context.Context) {
	cfg, _, err := config.Load(l.path)
	if err != nil {
		l.log.Error("config.toml was not reloaded, so the daemon keeps the settings it runs with", "err", err.Error())
		l.mu.Lock()
		l.state.Error = err.Error()
		l.mu.Unlock()
		return
	}
	l.pushes.apply(ctx, l.e, cfg.Push, l.log)
	restart := l.restartNeeded(cfg)
	l.mu.Lock()
	l.state = control.ConfigState{ReadAt: time.Now(), Restart: restart}
	l.mu.Unlock()
	if len(restart) > 0 {
		l.log.Warn("config.toml reloaded; the changes to " + strings.Join(restart, ", ") + " apply only after a restart: systemctl --user restart collie")
		return
	}
	l.log.Info("config.toml reloaded")
}

// restartNeeded names what cfg changes, since the daemon started, that
// only a restart applies.
func (l *liveConfig) restartNeeded(cfg config.File) []string {
	var out []string
	if !reflect.DeepEqual(deviceListen(cfg.Devices), l.devices) {
		out = append(out, "[devices]")
	}
	if cfg.Agents != l.agents {
		out = append(out, "[agents]")
	}
	if webPushOn(cfg.Push) != l.webOn {
		out = append(out, "webpush in [push]")
	}
	return out
}

// reloadAll is what a SIGHUP does: config.toml (logged on its own), then
// sources.json, whose error it returns.
func reloadAll(ctx context.Context, live *liveConfig, sources func() error) func() error {
	return func() error {
		if live != nil {
			live.reload(ctx)
		}
		return sources()
	}
}
