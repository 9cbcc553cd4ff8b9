package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/cli/hint"
)

// cmdDemo runs the bridge with collie-agent attached, in a throwaway
// folder: no config, no root and no systemd needed (`make run`).
func cmdDemo(ctx context.Context, e *env, args []string) error {
	ctx, hup, stop := catchSignals(ctx)
	defer stop()
	if err := parse(newFlags("collie demo", e), args); err != nil {
		return err
	}
	agentBin, err := findAgent()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "collie-demo-")
	if err != nil {
		return fmt.Errorf("make the demo's folder: %w", err)
	}
	defer os.RemoveAll(dir)
	paths := config.Paths{
		Config:  filepath.Join(dir, "config", "collie"),
		State:   filepath.Join(dir, "state", "collie"),
		Runtime: filepath.Join(dir, "run"),
	}
	if err := os.Mkdir(paths.Runtime, 0o700); err != nil {
		return fmt.Errorf("make the demo's runtime folder: %w", err)
	}
	// The device API on a port chosen now and written to the demo's
	// config.toml, the file the daemon reads, so that collie doctor run
	// with the demo's variables looks at the demo's real listener.
	devices, err := demoDevices(paths)
	if err != nil {
		return err
	}
	socket := filepath.Join(paths.Desk(), "demo.sock")
	if err := sources.Update(paths.Sources(), func(f *sources.File) error {
		return f.Add(sources.Source{Name: "demo", Socket: socket})
	}); err != nil {
		return err
	}

	agentConfig := filepath.Join(dir, "demo.toml")
	if err := os.WriteFile(agentConfig, []byte(demoAgentConfig), 0o600); err != nil {
		return fmt.Errorf("write the demo agent's config: %w", err)
	}
	agent := exec.Command(agentBin, "--name", "demo", "--socket", socket, "--config", agentConfig)
	agent.Stdout, agent.Stderr = e.stderr, e.stderr
	agent.SysProcAttr = dieWithParent()
	if err := agent.Start(); err != nil {
		return fmt.Errorf("start %s: %w", agentBin, err)
	}
	defer func() {
		agent.Process.Signal(syscall.SIGTERM)
		agent.Wait()
	}()
	if err := waitForSocket(socket, 5*time.Second); err != nil {
		return err
	}

	self, _ := os.Executable()
	fmt.Fprintf(e.stdout, `Collie demo: the bridge is running with the demo agent "demo" attached.
Look at it from another terminal:

    export XDG_RUNTIME_DIR=%s XDG_CONFIG_HOME=%s XDG_STATE_HOME=%s
    %s show
    %s durable list
    %s doctor

Stop with Ctrl-C; the demo's folder %s is removed.
`, paths.Runtime, filepath.Dir(paths.Config), filepath.Dir(paths.State), self, self, self, dir)
	go printPairing(ctx, e, paths.Control())
	return runBridge(ctx, e, hup, paths, devices, nil, config.Agents{}, slog.LevelInfo)
}

// demoDevices picks a free loopback port for the demo's device API and
// writes it to the demo's config.toml; the settings come back from that
// file as the daemon would read them.
func demoDevices(paths config.Paths) (*device.ListenConfig, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a free port for the demo's device API: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.MkdirAll(paths.Config, 0o700); err != nil {
		return nil, fmt.Errorf("make the demo's config folder: %w", err)
	}
	toml := fmt.Sprintf("# collie demo: the device API on a port free when the demo started.\n[devices]\nlisten = %q\n", addr)
	if err := os.WriteFile(paths.ConfigFile(), []byte(toml), 0o600); err != nil {
		return nil, fmt.Errorf("write the demo's config.toml: %w", err)
	}
	cfg, _, err := config.Load(paths.ConfigFile())
	if err != nil {
		return nil, err
	}
	return deviceListen(cfg.Devices), nil
}

// printPairing shows a pairing link once the demo's bridge is up, so a
// browser on this machine can answer the demo question.
func printPairing(ctx context.Context, e *env, controlPath string) {
	if err := waitForSocket(controlPath, 10*time.Second); err != nil {
		return
	}
	p, err := control.NewClient(controlPath).Pair(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "collie demo: no pairing link: %v\n", err)
		return
	}
	fmt.Fprintf(e.stdout, "\nAnswer the demo question in a browser on this machine (single use, 10 minutes):\n\n    %s\n\nIt shows the code %s.\n", p.URL, p.Code)
}

// findAgent finds collie-agent beside this binary, then on PATH.
func findAgent() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "collie-agent")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("collie-agent")
	if err != nil {
		return "", hint.New("collie-agent was not found beside collie or on PATH", "build both with: make build")
	}
	return p, nil
}

func waitForSocket(path string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().Type() == os.ModeSocket {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo agent did not create %s within %s; see its messages above", path, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// demoAgentConfig is the demo agent's configuration. The demo runs the
// agent beside the bridge, in the same cgroup, where the caller check
// cannot tell the bridge from the agent's own tools and would refuse every
// tap; a real agent runs as collie-agent@NAME.service with the check on.
const demoAgentConfig = `title = "Demo conversation"
CallerCheck = "off"

[question]
title = "Deploy the demo to staging?"
rationale = "This is the demo question of collie-agent. Answer it from the page collie demo printed."
`
