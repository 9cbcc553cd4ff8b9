package hook

import (
	"os"
	"path/filepath"

	"github.com/collie-linux/collie/internal/cli/hint"
)

// ProgramName is the file name of collie's hook program, the program the
// clients' hooks run (cmd/collie-hook). It is installed with collie:
// beside it, as a build's bin folder has them, or in LIBEXEC/collie, as a
// package installs it (/usr/bin/collie, /usr/libexec/collie/collie-hook).
const ProgramName = "collie-hook"

// ProgramFor is the hook program installed with the collie at collie, or
// "" when there is none (collie ask --hook then plays its part).
func ProgramFor(collie string) string { return ProgramWith(collie, executable) }

// ProgramWith is ProgramFor with runnable saying whether a path is a
// program that can be run (collie doctor's own check).
func ProgramWith(collie string, runnable func(string) bool) string {
	dir := filepath.Dir(collie)
	for _, p := range []string{
		filepath.Join(dir, ProgramName),
		filepath.Join(dir, "..", "libexec", "collie", ProgramName),
	} {
		if p = filepath.Clean(p); runnable(p) {
			return p
		}
	}
	return ""
}

// CollieFor is the collie installed with the hook program at prog (see
// ProgramFor), or "" when there is none.
func CollieFor(prog string) string {
	dir := filepath.Dir(prog)
	for _, p := range []string{
		filepath.Join(dir, "collie"),
		filepath.Join(dir, "..", "..", "bin", "collie"),
	} {
		if executable(p) {
			return filepath.Clean(p)
		}
	}
	return ""
}

// IsProgram reports whether the command a hook entry runs is the hook
// program (rather than collie, with ask --hook).
func IsProgram(command string) bool { return filepath.Base(command) == ProgramName }

// executable reports whether p is a regular file someone may run.
func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// FailClosed is the error of an incomplete agent environment (reason is
// the admission's): collie runs nothing there that authenticates, and
// its hook denies with it.
func FailClosed(reason string) error {
	return hint.Errorf("the agent platform sets SLOCK_CLI_TRANSPORT_DIR, SLOCK_HOME and SLOCK_AGENT_ID and a raft wrapper for its agents; a human runs collie with none of them set",
		"not a complete agent environment (%s); collie does not fall back to the host user's settings", reason)
}
