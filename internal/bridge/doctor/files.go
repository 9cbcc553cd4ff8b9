package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/linux/fileowner"
)

// installFix is the fix for a missing part of the package.
const installFix = "install the collie package, which has both programs and the units: sudo apt install ./collie_*.deb"

func checkBinary(_ context.Context, e *Env) []Row {
	self := fmt.Sprintf("collie %s at %s", e.Self.Version, e.Self.Path)
	if e.Agent == nil {
		return []Row{ok("%s", self)}
	}
	a, err := e.Agent()
	if err != nil {
		return []Row{warn(installFix, "%s; collie-agent: %v", self, err)}
	}
	if a.Version != e.Self.Version {
		return []Row{warn(installFix, "%s, but collie-agent at %s is version %s: they come from different builds", self, a.Path, a.Version)}
	}
	return []Row{ok("%s; collie-agent %s at %s", self, a.Version, a.Path)}
}

func checkConfig(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return []Row{fail("set the variable as the message says, then run collie doctor again", "%v", e.PathsErr)}
	}
	path := e.Paths.ConfigFile()
	_, exists, err := config.Load(path)
	switch {
	case err != nil:
		return []Row{fail("edit "+path+" as the message says, or remove it to use the defaults", "%v", err)}
	case !exists:
		return []Row{ok("no %s: the defaults are in use (collie.toml(5))", path)}
	}
	return []Row{ok("%s parses (collie.toml(5))", path)}
}

func mode(fi fs.FileInfo) string { return fmt.Sprintf("%04o", fi.Mode().Perm()) }

// access says what group or others may do with a file: "read" when they
// may read it (whatever else), else "write to" or "run".
func access(fi fs.FileInfo) string {
	switch p := fi.Mode().Perm(); {
	case p&0o044 != 0:
		return "read"
	case p&0o022 != 0:
		return "write to"
	}
	return "run"
}

func checkSources(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	path := e.Paths.Sources()
	attach := "collie durable attach NAME --socket $XDG_RUNTIME_DIR/desk/NAME.sock"
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return []Row{warn(attach, "no durable agent is attached yet (there is no %s)", path)}
	}
	if err != nil {
		return []Row{fail("make "+path+" readable by you", "cannot check %s: %v", path, err)}
	}
	if !fi.Mode().IsRegular() {
		return []Row{fail("move "+path+" away, then attach the agents again (collie durable attach)", "%s is not a regular file", path)}
	}
	if o := owner(fi); o != e.UID {
		return []Row{fail("sudo chown "+e.User+" "+path, "%s belongs to user %d, not to %d", path, o, e.UID)}
	}
	// K5: the file can hold tokens in plain text.
	if fi.Mode().Perm()&0o077 != 0 {
		return []Row{fail("chmod 0600 "+path, "%s has mode %s, so group or others can %s it; it can hold tokens", path, mode(fi), access(fi))}
	}
	f, err := sources.Load(path)
	if err != nil {
		return []Row{fail("edit "+path+" as the message says, or move it away and attach the agents again", "%v", err)}
	}
	if len(f.Sources) == 0 {
		return []Row{warn(attach, "%s has no durable agents", path)}
	}
	var list []string
	var refused []Row
	for _, s := range f.Sources {
		list = append(list, describe(s))
		if s.Refused != "" {
			r := fail("collie durable detach "+s.Name+" && collie durable attach "+s.Name+" --socket $XDG_RUNTIME_DIR/desk/"+s.Name+".sock",
				"%s: the bridge never connects to it: %s", s.Name, s.Refused)
			r.Subject = s.Name
			refused = append(refused, r)
		}
	}
	return append([]Row{ok("%s, mode %s: %s", path, mode(fi), strings.Join(list, "; "))}, refused...)
}

// describe names a source without its token (K5: "set, <n> bytes").
func describe(s sources.Source) string {
	if s.Transport() == "socket" {
		return s.Name + " (socket " + s.Socket + ")"
	}
	token := "none"
	if s.Token != "" {
		token = fmt.Sprintf("set, %d bytes", len(s.Token))
	}
	return fmt.Sprintf("%s (%s, token: %s)", s.Name, s.URL, token)
}

// privateDir checks a folder that must be the user's, mode 0700. A missing
// folder is the row missing returns.
func privateDir(e *Env, path string, missing func() Row) Row {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return missing()
	case err != nil:
		return fail("make "+path+" reachable by you", "cannot check %s: %v", path, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fail("rm "+path+" (a symlink), then run collie doctor again", "%s is a symlink", path)
	case !fi.IsDir():
		return fail("move "+path+" away, then run collie doctor again", "%s is not a directory", path)
	case owner(fi) != e.UID:
		return fail("sudo chown "+e.User+" "+path, "%s belongs to user %d, not to %d", path, owner(fi), e.UID)
	case fi.Mode()&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid) != 0o700:
		return fail("chmod 0700 "+path, "%s has mode %s, not 0700", path, octalMode(fi))
	}
	return ok("%s is yours, mode 0700", path)
}

// octalMode prints permission, setuid, setgid and sticky bits as sockpath
// does: 0755, 1777.
func octalMode(fi fs.FileInfo) string {
	m := uint32(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return fmt.Sprintf("%04o", m)
}

func checkDesk(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	desk := e.Paths.Desk()
	return []Row{privateDir(e, desk, func() Row {
		return warn("systemctl --user enable --now collie-agent@demo.socket",
			"there is no %s yet; the first collie-agent@NAME.socket makes it", desk)
	})}
}

func checkStateDir(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	dir := e.Paths.State
	return []Row{privateDir(e, dir, func() Row {
		return ok("there is no %s yet; Collie makes it, mode 0700, when it first records something", dir)
	})}
}

func checkAuditLog(_ context.Context, e *Env) []Row {
	if e.PathsErr != nil {
		return noPaths(e)
	}
	path := e.Paths.State + "/audit.log"
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return []Row{ok("there is no %s yet: nothing has been answered from a device", path)}
	case err != nil:
		return []Row{fail("make "+path+" readable by you", "cannot check %s: %v", path, err)}
	case !fi.Mode().IsRegular():
		return []Row{fail("move "+path+" away; Collie makes a new one", "%s is not a regular file", path)}
	case owner(fi) != e.UID:
		return []Row{fail("sudo chown "+e.User+" "+path, "%s belongs to user %d, not to %d", path, owner(fi), e.UID)}
	case fi.Mode().Perm()&0o077 != 0:
		return []Row{fail("chmod 0600 "+path, "%s has mode %s, so group or others can %s it", path, mode(fi), access(fi))}
	}
	return []Row{ok("%s is yours, mode %s", path, mode(fi))}
}

// owner returns the uid that owns fi. Where the platform shows no owner
// (the socket transport refuses there, T3) it is the user's own id, so
// that the mode rows are judged on what the platform shows.
func owner(fi fs.FileInfo) int {
	if uid, ok := fileowner.UID(fi); ok {
		return uid
	}
	return os.Getuid()
}
