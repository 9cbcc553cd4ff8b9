package doctor

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/linux/sockpath"
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
	err := sockpath.Check(s.Socket, e.UID)
	if err == nil && e.Probe == nil {
		return ok("%s is private", s.Socket)
	}
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		agent, perr := e.Probe(pctx, s.Socket)
		cancel()
		if perr == nil {
			return ok("%s is private and the agent answers (%s)", s.Socket, agent)
		}
		err = perr
	}
	reason := err.Error()
	var se *sockpath.Error
	if !errors.As(err, &se) {
		se = nil
	}
	fix, isFail := socketFix(e, s, se)
	if se == nil || !se.Code.Private() {
		// The agent does not answer: a collie-agent@NAME may say why.
		if r, ok := agentDownRow(ctx, e, s, reason); ok {
			return r
		}
	}
	if !isFail {
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

// socketFix returns the fix for a refusal of the walk or the peer check
// (T2-T4, L3), chosen by its code, and whether the row fails (a privacy
// error or one not known) rather than warns (the agent is down). se is
// nil for an error that is none of the walk's, such as a hello that failed.
func socketFix(e *Env, s sources.Source, se *sockpath.Error) (fix string, isFail bool) {
	if se == nil {
		return restart(e, s) + "; if that does not help, see collie-durable(7)", true
	}
	switch se.Code {
	case sockpath.CodeNoPath, sockpath.CodeForm:
		// T2: the bridge walks and connects to the path as written.
		return "attach the agent by the path it listens on, absolute and clean: collie durable detach " + s.Name + " && collie durable attach " + s.Name + " --socket FULL-PATH", true
	case sockpath.CodeSymlink:
		if se.Part == filepath.Clean(s.Socket) {
			return "rm " + se.Part + " && " + restart(e, s), true
		}
		return "attach the agent by a path without links: collie durable detach " + s.Name + " && collie durable attach " + s.Name + " --socket REAL-PATH", true
	case sockpath.CodeFolderMode:
		return "chmod 0700 " + se.Part, true
	case sockpath.CodeFolderOwner, sockpath.CodeNotDirectory:
		return ownFolder(e, s), true
	case sockpath.CodeWritable:
		return "chmod go-w " + se.Part, true
	case sockpath.CodeNotSocket:
		return "rm " + s.Socket + " && " + restart(e, s), true
	case sockpath.CodeSocketOwner, sockpath.CodeListener:
		return "the socket is another user's; detach it: collie durable detach " + s.Name, true
	case sockpath.CodeSocketMode:
		return "chmod 0600 " + s.Socket + ", and make the agent create it 0600 (SocketMode=0600)", true
	case sockpath.CodeNoSocket, sockpath.CodeNotListening:
		if u := unitOf(e, s.Socket); u != "" {
			return "systemctl --user enable --now " + u, false
		}
		return "start the agent that listens at " + s.Socket, false
	}
	return restart(e, s) + "; if that does not help, see collie-durable(7)", true
}

func ownFolder(e *Env, s sources.Source) string {
	return "give the agent a socket in a folder of your own: collie durable detach " + s.Name +
		" && collie durable attach " + s.Name + " --socket " + filepath.Join(e.Paths.Desk(), s.Name+".sock")
}

func restart(e *Env, s sources.Source) string {
	if u := unitOf(e, s.Socket); u != "" {
		return "systemctl --user restart " + u
	}
	return "restart the agent so that it makes its socket again"
}
