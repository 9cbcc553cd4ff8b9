package doctor

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/sockpath"
	"github.com/collie-linux/collie/internal/sources"
)

// probeTimeout bounds one agent's probe, as a poll of the bridge does.
const probeTimeout = 10 * time.Second

// checkDurableSockets makes one row per socket source: the bridge's own
// walk (T2, T3) with its exact reasons, then a connection and hello as the
// bridge makes them (T4).
func checkDurableSockets(ctx context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	f, err := sources.Load(e.Paths.Sources())
	if err != nil {
		return []Row{skip("fix the sources row first", "sources.json cannot be read (see the sources row)")}
	}
	var rows []Row
	for _, s := range f.Sources {
		if s.Transport() != "socket" {
			continue
		}
		rows = append(rows, checkSocket(ctx, e, s).about(s.Name))
	}
	if len(rows) == 0 {
		return []Row{skip("collie durable attach NAME --socket $XDG_RUNTIME_DIR/desk/NAME.sock", "no durable agent is attached over a socket")}
	}
	return rows
}

func checkSocket(ctx context.Context, e *Env, s sources.Source) Row {
	var reason string
	var noSocket bool
	if err := sockpath.Check(s.Socket, e.UID); err != nil {
		var se *sockpath.Error
		if errors.As(err, &se) {
			noSocket = se.NoSocket
		}
		reason = err.Error()
	} else if e.Probe != nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		agent, err := e.Probe(pctx, s.Socket)
		cancel()
		if err == nil {
			return ok("%s is private and the agent answers (%s)", s.Socket, agent)
		}
		reason = err.Error()
	} else {
		return ok("%s is private", s.Socket)
	}
	fix, isFail := socketFix(e, s, reason)
	if noSocket || !privacyReason(reason) {
		// The agent does not answer: a collie-agent@NAME may say why.
		if r, ok := agentDownRow(ctx, e, s, reason); ok {
			return r
		}
	}
	if noSocket || !isFail {
		return warn(fix, "%s", reason)
	}
	return fail(fix, "%s", reason)
}

// unitOf returns the collie-agent@NAME.socket that makes path, when path
// is $XDG_RUNTIME_DIR/desk/NAME.sock; "" otherwise.
func unitOf(e *Env, path string) string {
	dir, file := filepath.Split(path)
	name, ok := strings.CutSuffix(file, ".sock")
	if !ok || filepath.Clean(dir) != e.Paths.Desk() || sources.CheckName(name) != nil {
		return ""
	}
	return "collie-agent@" + name + ".socket"
}

// socketFixes map the exact reasons of T3 and T4 (sockpath, upstream) to
// what to run. The first group of each pattern is the path it is about.
// Each pattern is compiled on first use (lazyRegexp), not at every collie
// start-up.
var socketFixes = []struct {
	re  func() *regexp.Regexp
	fix func(e *Env, s sources.Source, part string) string
	// warnOnly: the agent is down, which is not a privacy error (T4).
	warnOnly bool
}{
	{re: lazyRegexp(`^the socket path (?:.+ )?(?:is not absolute|is not in clean form|has a control character|has a NUL byte|is \d+ bytes, more than)`), fix: func(_ *Env, s sources.Source, _ string) string {
		// T2: the bridge walks and connects to the path as written.
		return "attach the agent by the path it listens on, absolute and clean: collie durable detach " + s.Name + " && collie durable attach " + s.Name + " --socket FULL-PATH"
	}},
	{re: lazyRegexp(`^socket-not-private: (.+) is a symlink$`), fix: func(e *Env, s sources.Source, part string) string {
		if part == filepath.Clean(s.Socket) {
			return "rm " + part + " && " + restart(e, s)
		}
		return "attach the agent by a path without links: collie durable detach " + s.Name + " && collie durable attach " + s.Name + " --socket REAL-PATH"
	}},
	{re: lazyRegexp(`^the socket's folder (.+) has mode \d+, not 0700$`), fix: func(_ *Env, _ sources.Source, part string) string {
		return "chmod 0700 " + part
	}},
	{re: lazyRegexp(`^the socket's folder (.+) (belongs to user \d+, not to \d+|is not a directory)$`), fix: ownFolder},
	{re: lazyRegexp(`^(.+) has mode \d+, so group or others can write to it$`), fix: func(_ *Env, _ sources.Source, part string) string {
		return "chmod go-w " + part
	}},
	{re: lazyRegexp(`^(.+) is not a directory$`), fix: ownFolder},
	{re: lazyRegexp(`^(the path is not a socket)$`), fix: func(e *Env, s sources.Source, _ string) string {
		return "rm " + s.Socket + " && " + restart(e, s)
	}},
	{re: lazyRegexp(`^(the socket belongs to user \d+, not to \d+|the socket's listener is not you: .*)$`), fix: func(_ *Env, s sources.Source, _ string) string {
		return "the socket is another user's; detach it: collie durable detach " + s.Name
	}},
	{re: lazyRegexp(`^the socket has mode \d+, not 0600$`), fix: func(e *Env, s sources.Source, _ string) string {
		return "chmod 0600 " + s.Socket + ", and make the agent create it 0600 (SocketMode=0600)"
	}},
	{re: lazyRegexp(`^(no socket at .+|nothing is listening at .+)$`), warnOnly: true, fix: func(e *Env, s sources.Source, _ string) string {
		if u := unitOf(e, s.Socket); u != "" {
			return "systemctl --user enable --now " + u
		}
		return "start the agent that listens at " + s.Socket
	}},
}

// lazyRegexp compiles expr on its first use, once.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

func ownFolder(e *Env, s sources.Source, _ string) string {
	return "give the agent a socket in a folder of your own: collie durable detach " + s.Name +
		" && collie durable attach " + s.Name + " --socket " + filepath.Join(e.Paths.Desk(), s.Name+".sock")
}

func restart(e *Env, s sources.Source) string {
	if u := unitOf(e, s.Socket); u != "" {
		return "systemctl --user restart " + u
	}
	return "restart the agent so that it makes its socket again"
}

// privacyReason says whether reason is one of T3's refusals (or the
// listener's owner), rather than an agent that does not answer.
func privacyReason(reason string) bool {
	for _, f := range socketFixes {
		if f.re().MatchString(reason) {
			return !f.warnOnly
		}
	}
	return false
}

// socketFix returns the fix for reason, and whether the row fails (a
// privacy error or an unknown one) rather than warns (the agent is down).
func socketFix(e *Env, s sources.Source, reason string) (fix string, isFail bool) {
	for _, f := range socketFixes {
		if m := f.re().FindStringSubmatch(reason); m != nil {
			part := ""
			if len(m) > 1 {
				part = m[1]
			}
			return f.fix(e, s, part), !f.warnOnly
		}
	}
	return restart(e, s) + "; if that does not help, see collie-durable(7)", true
}
