// Command collie-agent is Collie's reference durable agent: it serves a
// conversation and questions over a private Unix socket, started by systemd
// socket activation (collie-agent@NAME.socket) or on its own.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/collie-linux/collie/internal/durable"
	"github.com/collie-linux/collie/internal/journal"
	"github.com/collie-linux/collie/internal/version"
	"github.com/collie-linux/collie/internal/wire"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// validName is the rule for an agent's instance name: it becomes a file name.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("collie-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "demo", "the agent's `name` (the instance of collie-agent@NAME)")
	socket := fs.String("socket", "", "the socket `path` when not socket-activated (default $XDG_RUNTIME_DIR/desk/NAME.sock)")
	cfgPath := fs.String("config", "", "the config `file` (default $XDG_CONFIG_HOME/collie-agent/NAME.toml)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "collie-agent", version.String())
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "collie-agent: unexpected argument %q; see collie-agent --help\n", fs.Arg(0))
		return 2
	}
	if !validName.MatchString(*name) {
		fmt.Fprintf(stderr, "collie-agent: the name %q is not valid; use 1 to 64 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit\n", *name)
		return 2
	}
	log := journal.NewLogger("collie-agent", stderr, slog.LevelInfo).With("agent", *name)
	if err := serve(*name, *socket, *cfgPath, log); err != nil {
		log.Error("collie-agent stopped", "err", err)
		fmt.Fprintln(stderr, "collie-agent:", err)
		return 1
	}
	return 0
}

func serve(name, socket, cfgPath string, log *slog.Logger) error {
	if cfgPath == "" {
		dir := os.Getenv("XDG_CONFIG_HOME")
		if dir == "" {
			dir = filepath.Join(os.Getenv("HOME"), ".config")
		}
		cfgPath = filepath.Join(dir, "collie-agent", name+".toml")
	}
	cfg, err := loadConfig(cfgPath, name)
	if err != nil {
		return err
	}
	if socket == "" {
		run := os.Getenv("XDG_RUNTIME_DIR")
		if run == "" {
			return errors.New("XDG_RUNTIME_DIR is not set; give --socket PATH or run under systemd --user")
		}
		socket = filepath.Join(run, "desk", name+".sock")
	}
	listenFDs := os.Getenv("LISTEN_FDS") // read before activation unsets it
	l, activated, err := durable.Listen(socket)
	if err != nil {
		return err
	}
	srv, err := durable.NewServer(wire.Hello{Agent: name, Software: "collie-agent " + version.String()}, log)
	if err != nil {
		return err
	}
	if err := srv.SetSnapshot(demoSnapshot(name, cfg)); err != nil {
		return err
	}
	log.Info("collie-agent serving", "socket", l.Addr().String(), "activated", activated, "listen_fds", listenFDs, "config", cfgPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx, l)
}

// demoSnapshot is the state the agent shows: one conversation with a
// greeting and the configured yes/no question.
func demoSnapshot(name string, cfg Config) *wire.Snapshot {
	return &wire.Snapshot{Spaces: []wire.Space{{
		ID: "main", Title: name,
		Tabs: []wire.Tab{{
			ID: "main", Title: "Main",
			Conversations: []wire.Conversation{{
				ID: "main", Title: cfg.Title,
				Items: []wire.Item{{
					ID: "welcome", Kind: wire.KindText, Role: "agent",
					Text: "collie-agent " + name + " is running. Answer its question from a paired device.",
				}},
				Questions: []wire.Question{{
					ID: "q1", Kind: wire.AskYesNo, Revision: 1, ToolCall: "demo-1",
					Title: cfg.Question.Title, Rationale: cfg.Question.Rationale,
				}},
			}},
		}},
	}}}
}
