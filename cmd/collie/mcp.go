package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/agent/mcpserver"
	"github.com/collie-linux/collie/internal/cli/version"
	"github.com/collie-linux/collie/internal/linux/fileowner"
)

// cmdMCP is `collie mcp`: an MCP server on stdin and stdout for one
// client session, asking through a local durable agent (internal/agent/mcpserver).
// Its stdout carries the protocol only; what it logs goes to stderr. In an
// agent environment it does not run (the table marks it human): it asks through a
// durable agent on this machine.
func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags("collie mcp", e)
	agent := fs.String("agent", "", "ask through collie-agent@`NAME` (default: $COLLIE_AGENT_SOCKET, $COLLIE_AGENT, or the only agent)")
	socket := fs.String("socket", "", "ask through the durable agent listening at `PATH`")
	timeout := fs.Duration("timeout", mcpserver.DefaultTimeout, "deny a question by default after `DURATION` when the call gives no timeout (at most 1h); approve always uses it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *timeout <= 0 || *timeout > mcpserver.MaxTimeout {
		return usagef("--timeout must be above 0 and at most %s", mcpserver.MaxTimeout)
	}
	path, err := hook.FindSocket(*socket, *agent, withRuntimeDir(e.getenv, "/run/user", os.Getuid(), os.Lstat))
	if err != nil {
		return err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("read the working folder: %w", err)
	}
	srv := mcpserver.New(mcpserver.Config{
		Agent: ask.SocketClient(path), Where: path, Cwd: cwd, Home: e.getenv("HOME"),
		Timeout: *timeout, Version: version.String(),
		Log: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.Serve(ctx, &mcp.StdioTransport{})
}

// withRuntimeDir is getenv, with $XDG_RUNTIME_DIR filled in when the MCP
// client started collie mcp without it: the MCP SDK for TypeScript, for
// one, passes a server only HOME, LOGNAME, PATH, SHELL, TERM and USER
// unless its configuration names more. The folder is base/UID, as
// pam_systemd makes it, and only when it is a directory (not a link) of
// the user's own with mode 0700; the socket's path is walked again before
// every connection all the same.
func withRuntimeDir(getenv func(string) string, base string, uid int, lstat func(string) (os.FileInfo, error)) func(string) string {
	if getenv("XDG_RUNTIME_DIR") != "" {
		return getenv
	}
	dir := filepath.Join(base, strconv.Itoa(uid))
	fi, err := lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return getenv
	}
	if o, ok := fileowner.UID(fi); !ok || o != uid {
		return getenv
	}
	return func(k string) string {
		if k == "XDG_RUNTIME_DIR" {
			return dir
		}
		return getenv(k)
	}
}
