package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
)

// Clients is what the coding-agents check looks at: where the user's and
// the current project's settings are, and which client commands are on
// the PATH. A nil Clients (the tests of the other checks) has no rows.
type Clients struct {
	Home, Project string
	Getenv        func(string) string
	LookPath      func(file string) (string, error)
	ReadFile      func(name string) ([]byte, error)
	// Executable reports whether a hook's collie can be run.
	Executable func(path string) bool
	// Procs lists the user's processes, to tell whether each client runs
	// under collie run (clientruns.go); nil: no such row.
	Procs func() ([]Proc, error)
}

// ClientsFromSystem is Clients for this machine and the working folder.
func ClientsFromSystem(getenv func(string) string, lookPath func(string) (string, error)) *Clients {
	cwd, _ := os.Getwd()
	return &Clients{Home: getenv("HOME"), Project: cwd, Getenv: getenv, LookPath: lookPath, ReadFile: os.ReadFile,
		Executable: func(p string) bool {
			fi, err := os.Stat(p)
			return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
		}, Procs: procsFromSystem}
}

// checkCodingAgents makes a row per coding agent that is installed (its
// command on the PATH) or configured (its settings exist): for a client
// with a hook, whether the hook is there, fails closed, has timeouts that
// let collie's deny come first, and is trusted where the client asks for
// trust (for OpenCode, whose hook is a plugin, pluginRow); and for every
// client, whether it runs under collie run now.
func checkCodingAgents(_ context.Context, e *Env) []Row {
	c := e.Clients
	if c == nil {
		return nil
	}
	var rows []Row
	for _, h := range ask.HookClients() {
		_, lookErr := c.LookPath(h.Name)
		var entries []ask.HookEntry
		var where []string
		var bad []Row
		for _, path := range c.settingsFiles(h) {
			data, err := c.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			where = append(where, path)
			if err != nil {
				bad = append(bad, fail("check the file's owner and mode", "cannot read %s: %v", path, err))
				continue
			}
			found, err := h.FindHook(data, path)
			if err != nil {
				bad = append(bad, fail("fix the file, then collie setup "+h.Name, "%s: %v", path, err))
				continue
			}
			entries = append(entries, found...)
		}
		mcpRow, mcpWhere := c.mcpRow(h)
		if lookErr != nil && len(where) == 0 && len(mcpWhere) == 0 {
			continue // neither installed nor configured
		}
		for _, r := range bad {
			rows = append(rows, r.about(h.Label))
		}
		switch {
		case len(bad) > 0:
		case h.Plugin != nil:
			rows = append(rows, c.pluginRow(h, entries, where).about(h.Label))
		case h.HasHook():
			rows = append(rows, c.hookRow(h, entries, where).about(h.Label))
		}
		rows = append(rows, mcpRow.about(h.Label+" MCP server"))
		if r, shown := c.runRow(e, h); shown {
			rows = append(rows, r.about(h.Label+" under collie run"))
		}
	}
	return rows
}

// mcpRow judges collie's MCP server entries of one client, and returns
// the files that exist among those the client reads its servers from.
func (c *Clients) mcpRow(h *ask.HookClient) (Row, []string) {
	setup := "collie setup " + h.Name
	if h.HasHook() {
		setup += " --no-hook"
	}
	var files, where []string
	if c.Home != "" {
		files = append(files, h.MCPPath(c.Getenv, c.Home, ""))
	}
	if c.Project != "" && c.Project != c.Home {
		files = append(files, h.MCPPath(c.Getenv, "", c.Project))
	}
	var found []string
	for _, path := range files {
		data, err := c.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		where = append(where, path)
		if err != nil {
			return warn("check the file's owner and mode", "cannot read %s: %v", path, err), where
		}
		e, err := h.FindMCP(data)
		if err != nil && slices.Contains(c.settingsFiles(h), path) {
			continue // the hook's row says what is wrong with the file
		}
		if err != nil {
			return warn("fix the file, then "+setup, "%s: %v", path, err), where
		}
		if e == nil {
			continue
		}
		if !filepath.IsAbs(e.Command) || !c.Executable(e.Command) {
			return warn(setup, "%s starts collie's MCP server as %s (in %s), which cannot be run here: the model cannot ask you anything", h.Label, e.Command, path), where
		}
		if !e.Right() {
			return warn(setup, "collie's MCP server in %s runs %s %s, not %s %s", path, e.Command, strings.Join(e.Args, " "), e.Command, strings.Join(ask.MCPArgs, " ")), where
		}
		found = append(found, path)
	}
	if len(found) == 0 {
		return ok("collie's MCP server is not set up for %s (optional: the model could ask you a question itself; %s adds it)", h.Label, setup), where
	}
	return ok("collie's MCP server is in %s: %s can ask you a question itself", strings.Join(found, " and "), h.Label), where
}

func (c *Clients) settingsFiles(h *ask.HookClient) []string {
	var files []string
	if !h.HasHook() {
		return nil // a client with MCP only
	}
	if c.Home != "" {
		files = append(files, h.SettingsPath(c.Getenv, c.Home, ""))
	}
	if c.Project != "" && c.Project != c.Home {
		files = append(files, h.SettingsPath(c.Getenv, "", c.Project))
	}
	return files
}

// hookRow judges the adapter's entries of one client.
func (c *Clients) hookRow(h *ask.HookClient, entries []ask.HookEntry, where []string) Row {
	setup := "collie setup " + h.Name
	if len(entries) == 0 {
		return warn(setup, "%s is installed without collie's hook: its tool calls are not asked on your phone", h.Label)
	}
	for _, en := range entries {
		prog := en.Program()
		if !filepath.IsAbs(prog) || !c.Executable(prog) {
			if h.Settings.OnFailure != "" && en.OnFailure == h.Settings.OnFailure {
				return fail(setup, "the hook runs %s, which cannot be run here: %s blocks every tool it gates", prog, h.Label)
			}
			return fail(setup, "the hook runs %s, which cannot be run here: %s then runs the tools without asking", prog, h.Label)
		}
		if h.Settings.OnFailure != "" && en.OnFailure != h.Settings.OnFailure {
			return fail(setup, "the hook has no \"onFailure\": %q: if it cannot run or crashes, %s runs the tool", h.Settings.OnFailure, h.Label)
		}
		if en.Untrusted {
			return fail(setup, "%s skips collie's hook: its trust is not recorded (or the hook changed since); run collie setup %s again, or trust it in %s's /hooks panel", h.Label, h.Name, h.Label)
		}
		if !en.OrBlock {
			return fail(setup, "the hook's command does not end in %q: if collie cannot start or is killed, %s runs the tool", strings.TrimSpace(h.OrBlock), h.Label)
		}
		if gap := en.ClientTimeout - hook.Deadline(en.Wait); gap < 5*time.Second {
			return fail(setup, "%s stops the hook after %v, but collie's deny can come %v after the start: raise the hook's timeout, or lower --timeout",
				h.Label, en.ClientTimeout, hook.Deadline(en.Wait))
		}
	}
	en := entries[0]
	msg := fmt.Sprintf("collie's hook is in %s: a question waits %v, the deny comes by %v, %s's own timeout is %v",
		strings.Join(where, " and "), en.Wait, hook.Deadline(en.Wait), h.Label, en.ClientTimeout)
	if h.Settings.OnFailure != "" {
		msg += "; a hook that cannot run blocks the tool"
	} else {
		msg += "; a hook that cannot run blocks the tool through its " + strconv.Quote(strings.TrimSpace(h.OrBlock)) + ", but one that outlives its timeout lets the tool run"
	}
	if en.ViaAsk() && hook.ProgramWith(en.Program(), c.Executable) != "" {
		msg += "; it runs collie ask --hook: " + setup + " again makes it run collie's hook program, which costs less CPU per tool call"
	}
	return ok("%s", msg)
}
