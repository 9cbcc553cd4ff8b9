package hook

import (
	"os"
	"path/filepath"
	"strings"
)

// agentClosed is what to say when the agent closed the connection
// without answering: it stopped, or failed as it started. Where to look
// for why depends on how it runs: a collie-agent@NAME.service under the
// user's systemd logs to the journal; an agent started by hand, or by
// collie demo, prints to wherever it was started.
func agentClosed(path string, getenv func(string) string) string {
	const closed = "the agent closed the connection without answering: it stopped, or failed as it started"
	if unit := agentUnit(path, getenv); unit != "" {
		return closed + "; see why: journalctl --user -u " + unit + " -p err"
	}
	return closed + "; see the messages of the program that runs it, in its terminal or its log"
}

// agentUnit is collie-agent@NAME.service when path is the socket
// collie-agent@NAME.socket makes ($XDG_RUNTIME_DIR/desk/NAME.sock) and a
// systemd user manager runs for this user; "" otherwise.
func agentUnit(path string, getenv func(string) string) string {
	run := getenv("XDG_RUNTIME_DIR")
	if run == "" || !filepath.IsAbs(run) {
		return ""
	}
	dir, file := filepath.Split(path)
	name, ok := strings.CutSuffix(file, ".sock")
	if !ok || name == "" || filepath.Clean(dir) != filepath.Join(run, "desk") {
		return ""
	}
	fi, err := os.Stat(filepath.Join(run, "systemd", "private"))
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return ""
	}
	return "collie-agent@" + name + ".service"
}
