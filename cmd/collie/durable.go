package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/doctor"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

func cmdAttach(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie durable attach", e)
	socket := fs.String("socket", "", "the agent's Unix socket `path`")
	rawURL := fs.String("url", "", "the agent's `URL` (token transport)")
	tokenEnv := fs.String("token-env", "", "the environment variable `VAR` that holds the token")
	caFile := fs.String("ca-file", "", "a PEM `file` of a private CA to trust for --url")
	name, err := oneName(fs, args)
	if err != nil {
		return err
	}
	src, err := attachSource(e, name, *socket, *rawURL, *tokenEnv, *caFile)
	if err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	if err := sources.Update(paths.Sources(), func(f *sources.File) error { return f.Add(src) }); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "attached %s\n", src)
	for _, w := range notThereYet(src, paths) {
		fmt.Fprintf(e.stderr, "warning: %s\n", termLine(w))
	}
	tellDaemon(ctx, e, paths)
	return nil
}

// notThereYet says what an attached source names that is not there yet:
// a socket no agent listens on, or whose folder is missing, or a CA file
// that does not exist. The source is attached all the same (an agent may
// start later, a file may come), but the user learns what was not found
// and how to start it, rather than "attached" alone.
func notThereYet(src sources.Source, paths config.Paths) []string {
	var out []string
	if src.Socket != "" {
		start := "start the agent that listens there; for collie-agent: collie-agent --name " + src.Name + " --socket " + src.Socket
		if src.Socket == filepath.Join(paths.Desk(), src.Name+".sock") {
			start = "start it with: systemctl --user enable --now collie-agent@" + src.Name + ".socket"
		}
		fi, err := os.Stat(src.Socket)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			dir := filepath.Dir(src.Socket)
			if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
				out = append(out, fmt.Sprintf("nothing is at %s yet, and its folder %s does not exist: the bridge reads %s once an agent listens there; %s", src.Socket, dir, src.Name, start))
			} else {
				out = append(out, fmt.Sprintf("nothing is at %s yet: the bridge reads %s once an agent listens there; %s", src.Socket, src.Name, start))
			}
		case err != nil:
			out = append(out, fmt.Sprintf("%s cannot be checked (%v): the bridge reads %s once it can reach it there", src.Socket, err, src.Name))
		case fi.Mode().Type() != fs.ModeSocket:
			out = append(out, fmt.Sprintf("%s is not a socket: the bridge cannot read %s there; give the path of the agent's socket (collie durable detach %s, then attach again)", src.Socket, src.Name, src.Name))
		default:
			if c, err := net.DialTimeout("unix", src.Socket, time.Second); errors.Is(err, syscall.ECONNREFUSED) {
				out = append(out, fmt.Sprintf("nothing listens on %s yet (the socket is left from an agent that stopped): the bridge reads %s once an agent listens there; %s", src.Socket, src.Name, start))
			} else if err == nil {
				c.Close()
			}
		}
	}
	if src.CAFile != "" {
		if _, err := os.Stat(src.CAFile); errors.Is(err, fs.ErrNotExist) {
			out = append(out, fmt.Sprintf("there is no file at %s (--ca-file) yet: the bridge cannot reach %s until the CA certificate is there; put the PEM file there", src.CAFile, src.Name))
		}
	}
	return out
}

// attachSource checks everything before anything is written: the socket
// transport (T3, T6) or the URL and token (K2), read from the environment
// so the token never appears on a command line (K5).
func attachSource(e *env, name, socket, rawURL, tokenEnv, caFile string) (sources.Source, error) {
	switch {
	case socket != "" && rawURL != "":
		return sources.Source{}, usagef("give --socket or --url, not both")
	case socket != "":
		if tokenEnv != "" || caFile != "" {
			return sources.Source{}, usagef("--token-env and --ca-file go with --url; a socket carries no token: its private path is its gate")
		}
		if err := socketPlatform(runtime.GOOS); err != nil {
			return sources.Source{}, err
		}
		// Taken as given, never made absolute or cleaned: the bridge walks
		// and connects to exactly this string, so it must be absolute and
		// clean (T2).
		src := sources.Source{Name: name, Socket: socket}
		return src, src.Validate()
	case rawURL != "":
		if tokenEnv == "" {
			return sources.Source{}, usagef("give the name of the environment variable that holds the token: --token-env VAR")
		}
		if err := sources.CheckURL(rawURL); err != nil {
			return sources.Source{}, err
		}
		raw, ok := os.LookupEnv(tokenEnv)
		if !ok {
			return sources.Source{}, hint.Errorf("put the agent's token in it (a good one: openssl rand -hex 32)", "the environment variable %s is not set", tokenEnv)
		}
		tok, err := wire.CheckToken(raw)
		if err != nil {
			return sources.Source{}, fmt.Errorf("%s: %w", tokenEnv, err)
		}
		if caFile != "" {
			abs, err := filepath.Abs(caFile)
			if err != nil {
				return sources.Source{}, fmt.Errorf("make %s absolute: %w", caFile, err)
			}
			caFile = abs
		}
		src := sources.Source{Name: name, URL: rawURL, Token: tok, CAFile: caFile}
		return src, src.Validate()
	}
	return sources.Source{}, usagef("give the agent's socket with --socket PATH, or its URL with --url URL --token-env VAR")
}

// socketPlatform refuses the socket transport where files have no Unix
// owners, before anything is written (T3, T6).
func socketPlatform(goos string) error {
	if goos == "windows" {
		return hint.New("a private socket needs Unix user ids", "on Windows use --url <https://...> --token-env VAR")
	}
	return nil
}

// oneName parses the flags and takes the one positional NAME, wherever it
// stands among them, so "attach NAME --socket P" and "attach --socket P
// NAME" both work.
func oneName(fs *flag.FlagSet, args []string) (string, error) {
	pos, err := parseArgs(fs, args, 0, -1)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usagef("give exactly one agent NAME")
	}
	return pos[0], nil
}

func cmdDetach(ctx context.Context, e *env, args []string) error {
	name, err := oneName(newFlags("collie durable detach", e), args)
	if err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	if err := sources.Update(paths.Sources(), func(f *sources.File) error { return f.Remove(name) }); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "detached %s\n", name)
	tellDaemon(ctx, e, paths)
	return nil
}

// tellDaemon asks a running daemon to read sources.json again. The change
// is saved either way, so a daemon that is not running is only a note.
func tellDaemon(ctx context.Context, e *env, paths config.Paths) {
	err := control.NewClient(paths.Control()).Reload(ctx)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		if msg, fix, failed := doctor.DaemonDown(paths); failed {
			fmt.Fprintf(e.stderr, "note: %s\nnote: it reads the change when it starts; %s\n", termLine(msg), termLine(fix))
			return
		}
		fmt.Fprintln(e.stderr, "note: the daemon is not running; it reads the change when it starts (systemctl --user start collie)")
	case err != nil:
		fmt.Fprintf(e.stderr, "note: the change is saved, but the daemon did not reload: %v\n", err)
	}
}

// cmdList is collie durable list: each agent checked now, by the daemon,
// or by the command itself when the daemon is not running.
func cmdList(ctx context.Context, e *env, args []string) error {
	return list[view.AgentStatus]{
		name:    "collie durable list",
		fetch:   checkAgents,
		empty:   "no durable agents attached; attach one with: collie durable attach NAME --socket PATH",
		columns: listColumns(),
		row:     listRow(time.Now()),
	}.run(ctx, e, args)
}

// checkAgents asks the daemon to check each agent now, rather than show
// what its last poll, up to 10 s ago, found; without the daemon, it
// checks them itself and says so.
func checkAgents(ctx context.Context, e *env, paths config.Paths) ([]view.AgentStatus, error) {
	agents, err := control.NewClient(paths.Control()).Check(ctx)
	if errors.Is(err, control.ErrNotRunning) {
		if msg, fix, failed := doctor.DaemonDown(paths); failed {
			fmt.Fprintf(e.stderr, "note: %s\nnote: each agent was checked just now; to start the daemon: %s\n", termLine(msg), termLine(fix))
		} else {
			fmt.Fprintln(e.stderr, "note: the daemon is not running; each agent was checked just now")
		}
		agents, err = probeAll(ctx, paths.Sources())
	}
	return agents, err
}

// listColumns is the header of collie durable list. CHECKED says how old
// each status is; MODE how the daemon reads the agent (a waiting read, or
// polled at the seed's cadence; "-" when the command checked it itself).
func listColumns() []string {
	return []string{"NAME", "TRANSPORT", "TARGET", "CHECKED", "MODE", "STATUS"}
}

// listRow is an agent's row of collie durable list, its age told at now.
func listRow(now time.Time) func(view.AgentStatus) []string {
	return func(a view.AgentStatus) []string {
		if a.TokenSet {
			a.Target += " (token set)"
		}
		status := "reachable"
		if !a.Reachable {
			status = "unreachable: " + a.Reason
		}
		mode := a.Mode
		if mode == "" {
			mode = "-"
		}
		return []string{a.Name, a.Transport, a.Target, age(now, a.Checked), mode, status}
	}
}

// writeList writes the table of collie durable list (writeTable).
func writeList(w io.Writer, agents []view.AgentStatus, now time.Time) error {
	return writeTable(w, listColumns(), agents, listRow(now))
}

// age says how long ago t was, for the CHECKED column.
func age(now, t time.Time) string {
	switch d := now.Sub(t); {
	case t.IsZero():
		return "never"
	case d < time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	default:
		return t.Local().Format(time.DateTime)
	}
}

// probeAll checks every attached agent now, as the daemon would.
func probeAll(ctx context.Context, sourcesPath string) ([]view.AgentStatus, error) {
	f, err := sources.Load(sourcesPath)
	if err != nil {
		return nil, err
	}
	out := make([]view.AgentStatus, 0, len(f.Sources))
	for _, s := range f.Sources {
		st := view.AgentStatus{Name: s.Name, Transport: s.Transport(), Target: s.Socket, Checked: time.Now()}
		var c upstream.Client
		if s.Transport() == "socket" {
			c = upstream.NewSocket(s.Socket, os.Getuid())
		} else {
			st.Target, st.TokenSet = s.URL, s.Token != ""
			c, err = upstream.NewHTTPS(s.URL, s.Token, upstream.HTTPSOptions{CAFile: s.CAFile})
			if err != nil {
				st.Reason = err.Error()
				out = append(out, st)
				continue
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := c.Hello(pctx)
		cancel()
		if err != nil {
			st.Reason = reasonOf(err)
		} else {
			st.Reachable, st.Agent = true, h.Agent
		}
		out = append(out, st)
	}
	return out, nil
}

func reasonOf(err error) string {
	var u *upstream.Unreachable
	if errors.As(err, &u) {
		return u.Reason
	}
	return err.Error()
}
