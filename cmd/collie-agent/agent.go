package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/agent/runcmd"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// agent runs the belt buttons' and starters' commands as its descendants
// (D8) and streams their output into the conversation as tool-call items.
type agent struct {
	name, socket, home string
	getenv             func(string) string
	log                *slog.Logger
	board              *board.Board

	mu   sync.Mutex
	cfg  Config
	runs map[*runcmd.Run]runInfo
}

type runInfo struct {
	conv   string
	button string // belt button id, or "" for a starter
}

func (a *agent) hooks() board.Hooks {
	return board.Hooks{Action: a.action, Starter: a.starter, Abort: a.abort}
}

// apply shows cfg's belt and starters; the commands they run are read
// from cfg at each tap.
func (a *agent) apply(cfg Config) error {
	belt := make([]wire.Button, 0, len(cfg.Belt))
	for _, b := range cfg.Belt {
		belt = append(belt, wire.Button{ID: b.ID, Label: b.Label})
	}
	starters := make([]wire.Starter, 0, len(cfg.Starters))
	for _, s := range cfg.Starters {
		starters = append(starters, wire.Starter{ID: s.ID, Label: s.Label})
	}
	if err := a.board.SetBelt(belt); err != nil {
		return err
	}
	a.board.SetStarters(starters)
	a.mu.Lock()
	a.cfg = cfg
	a.mu.Unlock()
	return nil
}

func find(list []CommandConfig, id string) (CommandConfig, bool) {
	for _, c := range list {
		if c.ID == id {
			return c, true
		}
	}
	return CommandConfig{}, false
}

func (a *agent) action(id, conv string) error {
	a.mu.Lock()
	cc, ok := find(a.cfg.Belt, id)
	busy := false
	for _, ri := range a.runs {
		busy = busy || ri.button == id
	}
	a.mu.Unlock()
	switch {
	case !ok:
		return durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no belt button %q; reload the agent's state", id)
	case busy:
		return durable.Refuse(http.StatusConflict, wire.CodeBusy, "%q is still running; wait for it or stop it first", cc.Label)
	}
	return a.run(cc, conv, id)
}

func (a *agent) starter(id string) (string, error) {
	a.mu.Lock()
	cc, ok := find(a.cfg.Starters, id)
	a.mu.Unlock()
	if !ok {
		return "", durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no starter %q; reload the agent's state", id)
	}
	conv := a.board.NewConversationID(id)
	if err := a.board.AddConversation(conv, cc.Label); err != nil {
		return "", err
	}
	return conv, a.run(cc, conv, "")
}

func (a *agent) abort(conv string) bool {
	a.mu.Lock()
	var stop []*runcmd.Run
	for r, ri := range a.runs {
		if ri.conv == conv {
			stop = append(stop, r)
		}
	}
	a.mu.Unlock()
	for _, r := range stop {
		r.Stop()
	}
	return len(stop) > 0
}

// stopAll stops every running command (the agent is stopping).
func (a *agent) stopAll() {
	a.mu.Lock()
	var stop []*runcmd.Run
	for r := range a.runs {
		stop = append(stop, r)
	}
	a.mu.Unlock()
	for _, r := range stop {
		r.Stop()
		<-r.Done()
	}
}

// run starts cc with its output going into a new tool-call item of conv.
// A command that cannot start is shown as a failed tool call; the tap
// itself was taken.
func (a *agent) run(cc CommandConfig, conv, button string) error {
	spec := cc.spec(a.getenv, a.home, a.name, a.socket)
	cmdline := shellQuote(spec.Argv)
	item, err := a.board.AppendItem(conv, wire.Item{Kind: wire.KindToolCall, Tool: &wire.ToolCall{
		Name: cc.Label, Summary: "$ " + cmdline + "\nstarting", Status: "running",
	}})
	if err != nil {
		return err
	}
	show := func(p runcmd.Progress) {
		a.board.UpdateItem(conv, item, func(it *wire.Item) {
			it.Tool.Output = p.Output
			it.Tool.Summary = "$ " + cmdline + "\n" + p.Summary()
			it.Tool.Status = p.Status()
		})
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	r, err := runcmd.Start(spec, show)
	if err != nil {
		a.log.Warn("command could not start", "command", cc.ID, "err", err)
		show(runcmd.Progress{Err: err})
		return nil
	}
	a.runs[r] = runInfo{conv: conv, button: button}
	a.log.Info("command started", "command", cc.ID, "conversation", conv, "pid", r.PID())
	go func() {
		<-r.Done()
		p := r.Progress()
		a.mu.Lock()
		delete(a.runs, r)
		a.mu.Unlock()
		a.log.Info("command finished", "command", cc.ID, "conversation", conv, "status", p.Status(),
			"exit_code", p.ExitCode, "timed_out", p.TimedOut, "output_bytes", p.Bytes)
	}()
	return nil
}

// shellQuote shows argv the way a shell user would type it.
func shellQuote(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@+%", r))
		}) < 0 {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// describeCheck is the log line's account of the caller check.
func describeCheck(cfg Config, cgroup string, pidfd bool) string {
	if cfg.CallerCheck == "off" {
		return "off: any process of this user can answer (CallerCheck = \"off\")"
	}
	how := "pidfd_open"
	if pidfd {
		how = "SO_PEERPIDFD"
	}
	if cgroup == "" {
		return "on, but the agent is in a root cgroup, so every write is refused; run it as collie-agent@NAME.service"
	}
	return fmt.Sprintf("on: refusing the agent, its descendants and cgroup %s (callers pinned with %s)", cgroup, how)
}
