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

	"github.com/collie-linux/collie/internal/ask"
	"github.com/collie-linux/collie/internal/atomicfile"
	"github.com/collie-linux/collie/internal/hint"
)

// cmdSetup is `collie setup CLIENT`: it writes the client's hook entry
// (the adapter of collie ask --hook CLIENT, row of ask.HookClients) into
// the client's settings, keeping everything else there.
func cmdSetup(_ context.Context, e *env, args []string) error {
	fl := newFlags("collie setup", e)
	project := fl.String("project", "", "write the project's settings in `DIR` instead of your own")
	dryRun := fl.Bool("dry-run", false, "print the change and write nothing")
	wait := fl.Duration("timeout", ask.SetupWait, "how long a question waits for your answer before the tool is denied")
	pos, err := parseArgs(fl, args, 1, 1)
	if err != nil {
		return err
	}
	h := ask.HookClientNamed(pos[0])
	if h == nil {
		return usagef("collie setup knows claude, codex and gemini, not %q", pos[0])
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
	return setupFile(e.stdout, h, h.SettingsPath(e.getenv, home, *project), collie, *wait, *dryRun, time.Now())
}

// setupFile merges the hook entry into the settings file at path: it
// prints the change, backs the old file up as path.bak-TIME and writes
// the new one whole (a temporary file renamed over it). A file it cannot
// read as settings is left as it is, with an error.
func setupFile(w io.Writer, h *ask.HookClient, path, collie string, wait time.Duration, dryRun bool, now time.Time) error {
	// Write through a link (a dotfiles folder) to its target.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	existed := err == nil
	updated, changed, err := h.MergeSettings(old, path, collie, wait)
	if errors.Is(err, ask.ErrSettings) {
		return hint.Errorf("fix the file (or move it away) and run collie setup "+h.Name+" again; nothing was written",
			"%s is not %s settings collie can change: %v", path, h.Label, err)
	}
	if err != nil {
		return fmt.Errorf("merging the hook into %s: %w", path, err)
	}
	if !changed {
		fmt.Fprintf(w, "%s already runs collie's hook in %s; nothing to change.\n", h.Label, path)
		return nil
	}
	fmt.Fprintf(w, "--- %s\n+++ %s\n", path, path)
	fmt.Fprint(w, lineDiff(string(old), string(updated)))
	if dryRun {
		fmt.Fprintln(w, "Dry run: nothing was written.")
		return nil
	}
	if existed {
		backup := path + ".bak-" + now.UTC().Format("20060102T150405Z")
		if err := atomicfile.Write(backup, old); err != nil {
			return fmt.Errorf("backing up %s: %w", path, err)
		}
		fmt.Fprintf(w, "Backed up the old file as %s.\n", backup)
	}
	if err := atomicfile.Write(path, updated); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(w, "Wrote %s: %s asks your phone before %s.\n", path, h.Label, gatedWhat(h))
	fmt.Fprintf(w, "A question waits %s; no answer, or any failure of the hook, denies the tool.\n", wait)
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
