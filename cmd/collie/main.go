// Command collie is Collie's bridge daemon and its command line: it reads
// durable agents over private sockets and shows their conversations and
// questions to the user's paired devices.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/doctor"
	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// main is the one way out of collie: every command returns an error, and
// the CLI core (cli.Program.Main) gives it its status from the one exit
// table and says it once.
func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitCode is err's exit status: the one table, cli.ExitCode; see
// collie(1) EXIT STATUS. collie run exits with its command's (cli.Status).
func exitCode(err error) int { return cli.ExitCode(err) }

// ExitStatus makes collie run's status a cli.Exited: the command said
// what it had to say, and collie exits with its status.
func (r runExit) ExitStatus() int { return int(r) }

// env is what a subcommand works with.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	cmd            *command             // the command running, for its usage and hints
	json           bool                 // the command line asked for JSON: errors are JSON too
	admission      loginstore.Admission // human, agent or fail closed: decided before every command (admit)
}

func (e *env) paths() (config.Paths, error) { return config.FromEnv(e.getenv) }

func run(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, getenv: os.Getenv, json: cli.WantsJSON(nil, args)}
	return e.program().Main(context.Background(), func(ctx context.Context) error {
		err := dispatch(ctx, e, args)
		if errors.Is(err, control.ErrNotRunning) {
			err = e.daemonDown(err)
		}
		return err
	})
}

// program is collie for the CLI core: its errors say "collie:", and a
// mistake on the command line points at the --help of the command that ran.
func (e *env) program() cli.Program {
	return cli.Program{Name: "collie", Stderr: e.stderr, JSON: e.json, Command: func() string {
		if e.cmd == nil {
			return ""
		}
		return e.cmd.name
	}}
}

// daemonDown is err, the daemon not running, with why it stopped and what
// to do when it stopped on an error (doctor.DaemonDown): every command
// that needs the daemon says the real reason, such as a typo in
// config.toml, instead of "start it".
func (e *env) daemonDown(err error) error {
	paths, perr := e.paths()
	if perr != nil {
		return err
	}
	msg, fix, failed := doctor.DaemonDown(paths)
	if !failed {
		return err
	}
	return hint.New(msg, fix)
}

// report says err once, as the CLI core does (cli.Program.Report).
func report(e *env, err error, code int) { e.program().Report(err, code) }

// usagef is a mistake on the command line: exit status 2.
func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

func dispatch(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		writeCommands(e.stderr)
		return usagef("no command given")
	}
	switch args[0] {
	case "-h", "--help", "-help":
		writeCommands(e.stdout)
		return nil
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, rest, err := lookup(args)
	if err != nil {
		return err
	}
	e.cmd = &c
	if err := e.admit(&c); err != nil {
		return err
	}
	return c.run(ctx, e, rest)
}

func cmdHelp(_ context.Context, e *env, args []string) error {
	if err := parse(newFlags("collie help", e), args); err != nil {
		return err
	}
	writeCommands(e.stdout)
	return nil
}

// newFlags is a command's FlagSet; its --help writes the command's usage
// to stdout, from the command table and the flags (cli.WriteUsage).
func newFlags(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		c := e.cmd
		if c == nil {
			c = &command{name: name}
		}
		cli.WriteUsage(e.stdout, c.usageLines(), c.summary, fs)
	}
	return fs
}

// parse parses a command's flags, which take no other argument.
func parse(fs *flag.FlagSet, args []string) error {
	_, err := parseArgs(fs, args, 0, 0)
	return err
}

// parseArgs parses a command's flags and returns its other arguments,
// from min to max of them (max -1: any number), wherever they stand.
// Help and a bad flag come back as errors for main (cli.Parse).
func parseArgs(fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	pos, err := cli.Parse(fs, args, fs.Usage)
	if err != nil {
		return nil, err
	}
	switch {
	case max >= 0 && len(pos) > max:
		return nil, usagef("unexpected argument %q", pos[max])
	case len(pos) < min:
		return nil, usagef("missing argument")
	}
	return pos, nil
}
