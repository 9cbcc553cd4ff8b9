package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/agent/ask"
	"github.com/collie-linux/collie/internal/agent/ask/hook"
	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/linux/atomicfile"
)

// cmdSetup is `collie setup CLIENT`: it writes the client's hook entry
// (the adapter of collie ask --hook CLIENT, row of ask.HookClients) and
// collie mcp as an MCP server (the row's MCP) into the client's config,
// keeping everything else there. --no-hook or --no-mcp leaves one out.
// A client without a command hook (OpenCode) gets only collie mcp.
func cmdSetup(_ context.Context, e *env, args []string) error {
	fl := newFlags("collie setup", e)
	project := fl.String("project", "", "write the project's settings in `DIR` instead of your own")
	dryRun := fl.Bool("dry-run", false, "print the change and write nothing")
	wait := fl.Duration("timeout", hook.SetupWait, "how long a question waits for your answer before the tool is denied")
	noHook := fl.Bool("no-hook", false, "leave the hook out: tools run without asking your phone first")
	noMCP := fl.Bool("no-mcp", false, "leave the MCP server out: the model cannot ask you a question itself")
	pos, err := parseArgs(fl, args, 1, 1)
	if err != nil {
		return err
	}
	h := ask.HookClientNamed(pos[0])
	if h == nil {
		return usagef("collie setup knows claude, codex, gemini and opencode, not %q", pos[0])
	}
	if !h.HasHook() && *noMCP {
		return usagef("%s has no command hook, so with --no-mcp there is nothing to set up: leave --no-mcp out", h.Label)
	}
	if *noHook && *noMCP {
		return usagef("--no-hook and --no-mcp leave nothing to set up: give one of them at most")
	}
	if *wait < 5*time.Second || *wait > time.Hour {
		return usagef("--timeout %v: give 5s to 1h", *wait)
	}
	collie, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the path of this collie: %w", err)
	}
	if collie, err = filepath.EvalSymlinks(collie); err != nil {
		return fmt.Errorf("finding the path of this collie: %w", err)
	}
	// The hooks run collie's hook program, installed with this collie;
	// without one (a collie built alone), collie ask --hook.
	hookProg := hook.ProgramFor(collie)
	if hookProg == "" {
		hookProg = collie
	}
	home := e.getenv("HOME")
	if *project == "" && home == "" {
		return hint.New("HOME is not set", "set HOME, or give --project DIR")
	}
	if *project != "" {
		if *project, err = filepath.Abs(*project); err != nil {
			return err
		}
		if fi, err := os.Stat(*project); err != nil || !fi.IsDir() {
			return hint.Errorf("give the project's folder", "--project %s is not a folder", *project)
		}
	}
	var edits []setupEdit
	if !*noHook && h.HasHook() && h.Plugin != nil {
		edits = append(edits, pluginEdit(h, h.PluginPath(e.getenv, home, *project), hookProg, *wait))
	}
	if !*noHook && h.HasHook() {
		edits = append(edits, hookEdit(h, h.SettingsPath(e.getenv, home, *project), hookProg, *wait))
	}
	if !*noMCP {
		edits = append(edits, mcpEdit(h, h.MCPPath(e.getenv, home, *project), collie))
	}
	return applySetup(e.stdout, h, edits, *dryRun, time.Now())
}

// setupEdit is one thing collie setup writes into one file.
type setupEdit struct {
	path  string
	what  string // "collie's hook": what the file already has when nothing changes
	merge func(old []byte, path string) ([]byte, bool, error)
	done  func(w io.Writer) // what the user now has, once written
}

// pluginEdit writes the plugin that runs the adapter, for a client whose
// hook is a plugin (OpenCode).
func pluginEdit(h *ask.HookClient, path, collie string, wait time.Duration) setupEdit {
	return setupEdit{path: path, what: "loads collie's plugin",
		merge: func(old []byte, _ string) ([]byte, bool, error) { return h.MergePlugin(old, collie, wait) },
		done: func(w io.Writer) {
			fmt.Fprintf(w, "%s asks your phone before %s.\n", h.Label, gatedWhat(h))
			fmt.Fprintf(w, "A question waits %s; no answer, or any failure of collie, denies the tool.\n", wait)
		}}
}

func hookEdit(h *ask.HookClient, path, collie string, wait time.Duration) setupEdit {
	if h.Plugin != nil {
		return setupEdit{path: path, what: `has "permission": "ask" for its tools`,
			merge: func(old []byte, path string) ([]byte, bool, error) { return h.MergeSettings(old, path, collie, wait) },
			done: func(w io.Writer) {
				fmt.Fprintf(w, "Without collie's plugin, %s asks in its own window before it runs a command, edits a file or fetches a page (\"permission\": \"ask\").\n", h.Label)
			}}
	}
	return setupEdit{path: path, what: "runs collie's hook",
		merge: func(old []byte, path string) ([]byte, bool, error) { return h.MergeSettings(old, path, collie, wait) },
		done: func(w io.Writer) {
			fmt.Fprintf(w, "%s asks your phone before %s.\n", h.Label, gatedWhat(h))
			fmt.Fprintf(w, "A question waits %s; no answer, or any failure of the hook, denies the tool.\n", wait)
		}}
}

func mcpEdit(h *ask.HookClient, path, collie string) setupEdit {
	return setupEdit{path: path, what: "has collie's MCP server",
		merge: func(old []byte, _ string) ([]byte, bool, error) { return h.MergeMCP(old, collie) },
		done: func(w io.Writer) {
			fmt.Fprintf(w, "%s starts %q as its MCP server %q: the model can ask you a question on your phone (its tools ask_yes_no, ask_choice, ask_text, ask_form, notify).\n",
				h.Label, collie+" "+strings.Join(ask.MCPArgs, " "), ask.MCPServerName)
		}}
}

// setupFile merges the hook entry into the settings file at path (see
// applySetup).
func setupFile(w io.Writer, h *ask.HookClient, path, collie string, wait time.Duration, dryRun bool, now time.Time) error {
	return applySetup(w, h, []setupEdit{hookEdit(h, path, collie, wait)}, dryRun, now)
}

// setupMCPFile merges collie's MCP server into the file at path.
func setupMCPFile(w io.Writer, h *ask.HookClient, path, collie string, dryRun bool, now time.Time) error {
	return applySetup(w, h, []setupEdit{mcpEdit(h, path, collie)}, dryRun, now)
}

// applySetup makes the edits, file by file: the edits of one file (Gemini
// CLI's hook and MCP server share settings.json) merge into one change.
// Before a file is written, every file's change is merged, so a file it
// cannot read leaves every file as it was, with an error.
func applySetup(w io.Writer, h *ask.HookClient, edits []setupEdit, dryRun bool, now time.Time) error {
	type change struct {
		path          string
		old, updated  []byte
		existed       bool
		changed, kept []setupEdit
	}
	var changes []*change
	byPath := map[string]*change{}
	for _, ed := range edits {
		path := ed.path
		// Write through a link (a dotfiles folder) to its target.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		c := byPath[path]
		if c == nil {
			old, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("reading %s: %w", path, err)
			}
			c = &change{path: path, old: old, updated: old, existed: err == nil}
			byPath[path] = c
			changes = append(changes, c)
		}
		updated, changed, err := ed.merge(c.updated, path)
		if errors.Is(err, ask.ErrSettings) {
			return hint.Errorf("fix the file (or move it away) and run collie setup "+h.Name+" again; nothing was written",
				"%s is not %s settings collie can change: %v", path, h.Label, err)
		}
		if err != nil {
			return fmt.Errorf("changing %s: %w", path, err)
		}
		if changed {
			c.updated = updated
			c.changed = append(c.changed, ed)
		} else {
			c.kept = append(c.kept, ed)
		}
	}
	for _, c := range changes {
		for _, ed := range c.kept {
			fmt.Fprintf(w, "%s already %s in %s; nothing to change.\n", h.Label, ed.what, c.path)
		}
		if len(c.changed) == 0 {
			continue
		}
		fmt.Fprintf(w, "--- %s\n+++ %s\n", c.path, c.path)
		fmt.Fprint(w, lineDiff(string(c.old), string(c.updated)))
		if dryRun {
			fmt.Fprintln(w, "Dry run: nothing was written.")
			continue
		}
		if c.existed {
			backup := c.path + ".bak-" + now.UTC().Format("20060102T150405Z")
			if err := atomicfile.Write(backup, c.old); err != nil {
				return fmt.Errorf("backing up %s: %w", c.path, err)
			}
			fmt.Fprintf(w, "Backed up the old file as %s.\n", backup)
		}
		if err := atomicfile.Write(c.path, c.updated); err != nil {
			return fmt.Errorf("writing %s: %w", c.path, err)
		}
		fmt.Fprintf(w, "Wrote %s.\n", c.path)
		for _, ed := range c.changed {
			ed.done(w)
		}
	}
	return nil
}

func gatedWhat(h *ask.HookClient) string {
	if h.Name == "gemini" {
		return "it runs a shell command, writes or edits a file, fetches a page or uses an MCP tool"
	}
	return "it runs a command, writes or edits a file, fetches a page or uses an MCP tool"
}

// lineDiff is a short diff of a and b: the changed lines with a "-" or
// "+", two lines of context around each change, "..." for the rest.
func lineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	if len(x)*len(y) > 4_000_000 {
		return fmt.Sprintf("(%d lines become %d lines)\n", len(x), len(y))
	}
	// Longest common subsequence, from the end.
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	const context = 2
	near := func(k int) bool {
		for d := max(k-context, 0); d <= min(k+context, len(ops)-1); d++ {
			if ops[d].op != ' ' {
				return true
			}
		}
		return false
	}
	var out strings.Builder
	skipped := false
	for k, l := range ops {
		if !near(k) {
			if !skipped {
				out.WriteString("  ...\n")
			}
			skipped = true
			continue
		}
		skipped = false
		fmt.Fprintf(&out, "%c %s\n", l.op, l.text)
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
