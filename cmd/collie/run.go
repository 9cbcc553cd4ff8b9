//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/agent/runagent"
	"github.com/collie-linux/collie/internal/agent/runrecord"
	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/cli/version"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// cmdRun runs a command (a coding agent) as the child of a durable agent
// of its own, served in this process (internal/agent/runagent): every tool the
// command runs descends from the agent, whose caller check refuses their
// answers. The run is attached to the bridge for its duration and is one
// conversation on the user's devices.
func cmdRun(ctx context.Context, e *env, args []string) error {
	// Signals first: from here on they are the child's, passed on by the
	// loop below, and never stop collie run before its child.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	fs := newFlags("collie run", e)
	name := fs.String("name", "", "the run's agent `NAME`, its socket $XDG_RUNTIME_DIR/desk/NAME.sock (default: from the command, the folder and the process id)")
	noSystemd := fs.Bool("no-systemd", false, "do not ask the user manager for a scope: use a child cgroup where the cgroup tree is writable, else the process family")
	sandbox := fs.Bool("sandbox", false, "run the command under bubblewrap with $XDG_RUNTIME_DIR emptied but for the run's socket: its tools cannot reach the user manager, other agents or the bridge's control socket")
	argv, err := runArgs(fs, args)
	if err != nil {
		return err
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		return hint.Errorf("check the command's name, or give its full path", "cannot run %s: %v", argv[0], err)
	}
	var bwrap string
	if *sandbox {
		if bwrap, err = exec.LookPath("bwrap"); err != nil {
			return hint.New("--sandbox needs bubblewrap, and bwrap is not on PATH", "install it (apt install bubblewrap), or run without --sandbox")
		}
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	if paths.Runtime == "" {
		return hint.New("XDG_RUNTIME_DIR is not set", "run collie run in your login session, where it is set")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("read the current folder: %w", err)
	}
	if *name == "" {
		*name = defaultRunName(argv[0], cwd, os.Getpid())
	} else if err := sources.CheckName(*name); err != nil {
		return &cli.UsageError{Err: err}
	}
	client := filepath.Base(argv[0])
	socket := filepath.Join(paths.Desk(), *name+".sock")
	title := runTitle(client, cwd, e.getenv("HOME"))

	a, err := runagent.Start(ctx, runagent.Options{
		Name: *name, Socket: socket, Title: title, Software: "collie run " + version.String(),
		UserManager: !*noSystemd, Getenv: e.getenv, Log: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fmt.Errorf("cannot start the run's agent: %w", err)
	}
	defer func() {
		if err := a.Stop(); err != nil {
			fmt.Fprintf(e.stderr, "collie run: note: %v\n", err)
		}
	}()
	note := fmt.Sprintf("%s runs in %s. Protection: %s: %s.", client, displayFolder(cwd, e.getenv("HOME")), a.Protection, a.Describe())
	if *sandbox {
		note += " Sandbox: the command sees an empty runtime folder but for this run's socket."
	}
	a.Note(note)
	if a.Protection == runagent.Family {
		fmt.Fprintf(e.stderr, "collie run: note: the run has no cgroup of its own (%s); its tools are told apart by process family only\n", a.Why)
	}

	attached := attachRun(ctx, e, paths, *name, socket)
	rec := runrecord.Record{Name: *name, PID: os.Getpid(), Socket: socket, Command: client, Folder: cwd,
		Protection: a.Protection, Unit: a.Unit, Cgroup: a.Cgroup, Sandbox: *sandbox, Attached: attached, Started: time.Now().UTC()}
	recDir := runrecord.Dir(paths.Runtime)
	if err := runrecord.Write(recDir, rec); err != nil {
		fmt.Fprintf(e.stderr, "collie run: note: collie doctor will not see this run: %v\n", err)
	}
	defer runrecord.Remove(recDir, *name)

	// A signal that came while the agent started stops the run before
	// the command starts, as it would have stopped the command.
	select {
	case sig := <-sigs:
		a.CloseConversation()
		detachRun(ctx, e, paths, *name, attached)
		return runExit(128 + int(sig.(syscall.Signal)))
	default:
	}
	child := runagent.Child{
		Path: prog, Argv: argv, Env: runEnv(os.Environ(), *name, socket), Dir: cwd,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	if *sandbox {
		child.Sandbox = &runagent.Sandbox{Bwrap: bwrap, RuntimeDir: paths.Runtime, Socket: socket}
	}
	p, err := runagent.StartChild(child)
	if err != nil {
		a.CloseConversation()
		detachRun(ctx, e, paths, *name, attached)
		return err
	}
	status := superviseRun(p, sigs)

	a.Note(fmt.Sprintf("%s exited with status %d.", client, status))
	a.CloseConversation()
	detachRun(ctx, e, paths, *name, attached)
	if status != 0 {
		return runExit(status)
	}
	return nil
}

// superviseRun passes signals on to the child until it exits, and
// returns its exit status. SIGTERM and SIGHUP are passed on as they come;
// SIGINT and SIGQUIT only when they did not come from the terminal, which
// sent them to the child already (see runagent.FromTerminal).
func superviseRun(p *runagent.Process, sigs <-chan os.Signal) int {
	for {
		select {
		case st := <-p.Done():
			return st
		case s := <-sigs:
			if (s == syscall.SIGINT || s == syscall.SIGQUIT) && runagent.FromTerminal(os.Stdin) {
				continue
			}
			p.Signal(s)
		}
	}
}

// runExit is the child's exit status, collie run's own: main exits with
// it and prints nothing.
type runExit int

func (r runExit) Error() string { return "the command exited with status " + strconv.Itoa(int(r)) }

// runArgs parses collie run's flags, which stop at "--" or at the first
// argument that is not a flag: the rest is the command, flags and all.
func runArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // said once, below
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		// The same failure again, in collie's words (help included).
		_, err := cli.Parse(fs, args, usage)
		if err == nil {
			err = usagef("%v", err)
		}
		return nil, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, usagef("give the command to run: collie run [--name NAME] -- COMMAND [ARGS...]")
	}
	return rest, nil
}

// defaultRunName is a run's agent name when --name is not given: the
// command's and the folder's names and the process id, which no other
// live run has ("claude-app-4242").
func defaultRunName(cmd, dir string, pid int) string {
	var parts []string
	for _, s := range []string{filepath.Base(cmd), filepath.Base(dir)} {
		if p := namePart(s, 24); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, strconv.Itoa(pid)), "-")
}

// namePart keeps what an agent's name may hold (a-z, 0-9, '.', '_', '-'),
// in lower case, other characters turned to '-', at most max bytes.
func namePart(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '.', r == '_':
			b.WriteRune(r)
		default:
			if !strings.HasSuffix(b.String(), "-") {
				b.WriteByte('-')
			}
		}
		if b.Len() >= max {
			break
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.Trim(out, "-._")
}

// displayFolder writes dir with the home folder as "~".
func displayFolder(dir, home string) string {
	if home != "" && home != "/" {
		if dir == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(dir, strings.TrimSuffix(home, "/")+"/"); ok {
			return "~/" + rest
		}
	}
	return dir
}

// runTitle is the run's conversation title: "claude in ~/src/app",
// cleaned and cut like any title.
func runTitle(client, dir, home string) string {
	t, _ := sanitize.Line(client+" in "+displayFolder(dir, home), sanitize.TitleBytes)
	return t
}

// runEnv is the child's environment: collie run's, with the run's agent
// named where collie ask, its hooks and collie mcp look for it, and
// nothing of a socket activation that was collie run's.
func runEnv(environ []string, name, socket string) []string {
	drop := map[string]bool{"COLLIE_AGENT": true, "COLLIE_AGENT_SOCKET": true, "COLLIE_RUN": true,
		"LISTEN_PID": true, "LISTEN_FDS": true, "LISTEN_FDNAMES": true}
	out := make([]string, 0, len(environ)+3)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			out = append(out, kv)
		}
	}
	return append(out, "COLLIE_AGENT_SOCKET="+socket, "COLLIE_AGENT="+name, "COLLIE_RUN="+name)
}

// attachRun attaches the run's agent to the bridge (sources.json, then a
// reload, as collie durable attach does) and says once on stderr when the
// daemon is not running. It reports whether the agent is in sources.json.
func attachRun(ctx context.Context, e *env, paths config.Paths, name, socket string) bool {
	err := sources.Update(paths.Sources(), func(f *sources.File) error {
		if s, ok := f.Get(name); ok && s.Socket == socket {
			// Left by a run of the same name that did not end cleanly;
			// its socket was not live, so it is this run's now.
			return nil
		}
		return f.Add(sources.Source{Name: name, Socket: socket})
	})
	if err != nil {
		fmt.Fprintf(e.stderr, "collie run: note: the run is not shown on your devices: %v\n", err)
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch err := control.NewClient(paths.Control()).Reload(cctx); {
	case errors.Is(err, control.ErrNotRunning):
		fmt.Fprintln(e.stderr, "collie run: note: the collie daemon is not running, so this run is not on your devices until it starts (systemctl --user start collie); the run works without it")
	case err != nil:
		fmt.Fprintf(e.stderr, "collie run: note: the daemon did not take the run: %v\n", err)
	}
	return true
}

// detachRun lets the bridge see the run's conversation closed, then
// detaches the run's agent.
func detachRun(ctx context.Context, e *env, paths config.Paths, name string, attached bool) {
	if !attached {
		return
	}
	c := control.NewClient(paths.Control())
	waitClosedSeen(ctx, c, name, 2*time.Second)
	err := sources.Update(paths.Sources(), func(f *sources.File) error { return f.Remove(name) })
	if err != nil {
		fmt.Fprintf(e.stderr, "collie run: note: %v\n", err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Reload(cctx); err != nil && !errors.Is(err, control.ErrNotRunning) {
		fmt.Fprintf(e.stderr, "collie run: note: the daemon did not reload: %v\n", err)
	}
}

// waitClosedSeen waits, at most max, until the running daemon shows the
// run's conversation closed, so a device sees it end before the agent
// goes. A daemon that is not running, or does not read the agent, ends
// the wait at once.
func waitClosedSeen(ctx context.Context, c *control.Client, name string, max time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, max)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		agents, err := c.View(ctx)
		if err != nil {
			return
		}
		seen := false
		for _, a := range agents {
			if a.Name != name || a.Snapshot == nil {
				continue
			}
			seen = true
			for _, sp := range a.Snapshot.Spaces {
				for _, tb := range sp.Tabs {
					for _, cv := range tb.Conversations {
						if cv.ID == runagent.ConversationID && cv.Closed {
							return
						}
					}
				}
			}
		}
		if !seen {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
