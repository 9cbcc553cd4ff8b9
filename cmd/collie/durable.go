package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/collie-linux/collie/internal/control"
	"github.com/collie-linux/collie/internal/sources"
	"github.com/collie-linux/collie/internal/upstream"
)

func newFlags(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return usagef("see collie(1)")
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func cmdAttach(ctx context.Context, e *env, args []string) error {
	name, rest, err := splitName(args, "socket")
	if err != nil {
		return err
	}
	fs := newFlags("collie durable attach", e)
	socket := fs.String("socket", "", "the agent's Unix socket `path`")
	if err := parse(fs, rest); err != nil {
		return err
	}
	if *socket == "" {
		return usagef("give the agent's socket with --socket PATH (for example %%t/desk/NAME.sock is $XDG_RUNTIME_DIR/desk/NAME.sock)")
	}
	path, err := filepath.Abs(*socket)
	if err != nil {
		return fmt.Errorf("make %s absolute: %w", *socket, err)
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	src := sources.Source{Name: name, Socket: path}
	if err := sources.Update(paths.Sources(), func(f *sources.File) error { return f.Add(src) }); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "attached %s (socket %s)\n", name, path)
	tellDaemon(ctx, e, paths.Control())
	return nil
}

func cmdDetach(ctx context.Context, e *env, args []string) error {
	name, rest, err := splitName(args)
	if err != nil {
		return err
	}
	if err := parse(newFlags("collie durable detach", e), rest); err != nil {
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
	tellDaemon(ctx, e, paths.Control())
	return nil
}

// tellDaemon asks a running daemon to read sources.json again. The change
// is saved either way, so a daemon that is not running is only a note.
func tellDaemon(ctx context.Context, e *env, controlPath string) {
	err := control.NewClient(controlPath).Reload(ctx)
	switch {
	case errors.Is(err, control.ErrNotRunning):
		fmt.Fprintln(e.stderr, "note: the daemon is not running; it reads the change when it starts (systemctl --user start collie)")
	case err != nil:
		fmt.Fprintf(e.stderr, "note: the change is saved, but the daemon did not reload: %v\n", err)
	}
}

func cmdList(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie durable list", e)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	paths, err := e.paths()
	if err != nil {
		return err
	}
	agents, err := control.NewClient(paths.Control()).Agents(ctx)
	if errors.Is(err, control.ErrNotRunning) {
		fmt.Fprintln(e.stderr, "note: the daemon is not running; each agent was checked just now")
		agents, err = probeAll(ctx, paths.Sources())
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(e.stdout, agents)
	}
	if len(agents) == 0 {
		fmt.Fprintln(e.stdout, "no durable agents attached; attach one with: collie durable attach NAME --socket PATH")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tTARGET\tSTATUS")
	for _, a := range agents {
		status := "reachable"
		if !a.Reachable {
			status = "unreachable: " + a.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.Transport, a.Target, status)
	}
	return tw.Flush()
}

// probeAll checks every attached agent now, as the daemon would.
func probeAll(ctx context.Context, sourcesPath string) ([]control.AgentStatus, error) {
	f, err := sources.Load(sourcesPath)
	if err != nil {
		return nil, err
	}
	out := make([]control.AgentStatus, 0, len(f.Sources))
	for _, s := range f.Sources {
		st := control.AgentStatus{Name: s.Name, Transport: s.Transport(), Target: s.Socket, Checked: time.Now()}
		if s.Transport() != "socket" {
			st.Target, st.Reason = s.URL, "this transport is not supported yet"
			out = append(out, st)
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		h, err := upstream.NewSocket(s.Socket, os.Getuid()).Hello(pctx)
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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
