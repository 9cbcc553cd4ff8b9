package doctor

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/linux/sockpath"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fakeSystemd answers from a map; a missing unit is not-found.
type fakeSystemd map[string]Unit

func (f fakeSystemd) Unit(_ context.Context, name string) (Unit, error) {
	if u, ok := f[name]; ok {
		u.Name = name
		return u, nil
	}
	return Unit{Name: name, Load: "not-found", Active: "inactive", Sub: "dead"}, nil
}
func (fakeSystemd) Close() {}

type fakeDaemon struct {
	agents []view.AgentStatus
	err    error
}

func (d fakeDaemon) Agents(context.Context) ([]view.AgentStatus, error) { return d.agents, d.err }

// healthy lays out a working installation under a temporary root: a
// private desk with the demo agent's socket, sources.json 0600 naming it,
// and fakes for the user manager, logind, journald and the daemon that
// say all is well. It returns the Env and the root.
func healthy(t *testing.T) (*Env, string) {
	t.Helper()
	// Short: a socket path has a 108-byte limit.
	root, err := os.MkdirTemp("", "cd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	paths := config.Paths{Config: root + "/config/collie", State: root + "/state/collie", Runtime: root + "/run"}
	for _, d := range []string{paths.Config, paths.Runtime, paths.Desk()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(paths.Desk(), "demo.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sources.Save(paths.Sources(), sources.File{Sources: []sources.Source{
		{Name: "demo", Socket: sock},
		{Name: "cloud", URL: "https://agent.example.com", Token: strings.Repeat("k", 64)},
	}}); err != nil {
		t.Fatal(err)
	}
	active := func(path, sub string) Unit {
		return Unit{Load: "loaded", Active: "active", Sub: sub, FileState: "enabled", Path: path}
	}
	sd := fakeSystemd{
		"collie.service":           active("/usr/lib/systemd/user/collie.service", "running"),
		"collie-agent@.socket":     {Path: "/usr/lib/systemd/user/collie-agent@.socket", FileState: "disabled"},
		"collie-agent@.service":    {Path: "/usr/lib/systemd/user/collie-agent@.service", FileState: "static"},
		"collie-agent@demo.socket": active("/usr/lib/systemd/user/collie-agent@.socket", "listening"),
	}
	// A phone's address is part of a working set-up.
	if err := os.WriteFile(paths.ConfigFile(), []byte("[devices]\npublic_url = \"https://collie.example.ts.net\"\nproxy_headers = \"x-forwarded\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &Env{
		Paths: paths, UID: os.Getuid(), User: "alice", Version: "0.1.0",
		Self:     Binary{Path: "/usr/bin/collie", Version: "0.1.0"},
		Agent:    func() (Binary, error) { return Binary{Path: "/usr/bin/collie-agent", Version: "0.1.0"}, nil },
		Systemd:  func(context.Context) (Systemd, error) { return sd, nil },
		Logind:   func(context.Context, int) (bool, error) { return true, nil },
		Journald: func() error { return nil },
		Daemon:   fakeDaemon{agents: []view.AgentStatus{{Name: "demo", Transport: "socket", Target: sock, Reachable: true}}},
		Probe:    func(context.Context, string) (string, error) { return "demo", nil },
		Dial:     func(context.Context, string) error { return nil },
		Fetch: func(context.Context, string) (int, []byte, error) {
			return 200, []byte(view.HealthzBody), nil
		},
		Push: func(context.Context) (control.PushStatus, error) {
			return control.PushStatus{Providers: []string{"ntfy"}, Config: &control.ConfigState{ReadAt: time.Date(2099, 1, 1, 0, 0, 0, 0, time.Local)}}, nil
		},
		AgentCheck: func(_ context.Context, name string) (string, error) {
			return root + "/config/collie-agent/" + name + ".toml is valid", nil
		},
	}
	return e, root
}

// golden compares got, with root written as $ROOT, with testdata/name.
func golden(t *testing.T, name, got, root string) {
	t.Helper()
	got = strings.ReplaceAll(got, root, "$ROOT")
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/bridge/doctor -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./internal/bridge/doctor -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func run(t *testing.T, e *Env, only ...string) []Row {
	t.Helper()
	if len(only) == 1 && only[0] == "" {
		only = nil
	}
	rows, err := Run(context.Background(), e, only...)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func text(t *testing.T, rows []Row) string {
	var b bytes.Buffer
	if err := WriteText(&b, rows); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestHealthy_L4: a working installation is all ok, exit status 0, and the
// token is shown only as "set, 64 bytes" (K5).
func TestHealthy_L4(t *testing.T) {
	e, root := healthy(t)
	rows := run(t, e, "")
	for _, r := range rows {
		if r.Status != OK {
			t.Errorf("row %s %s is %s: %s", r.Check, r.Subject, r.Status, r.Message)
		}
	}
	out := text(t, rows)
	if strings.Contains(out, "kkkk") {
		t.Errorf("K5: the token is printed:\n%s", out)
	}
	golden(t, "healthy.txt", out, root)
}

// broken breaks one thing per check.
func broken(t *testing.T) (*Env, string) {
	e, root := healthy(t)
	p := e.Paths
	sock := filepath.Join(p.Desk(), "demo.sock")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// T3: the socket replaced by a symlink to a real one.
	must(os.Rename(sock, filepath.Join(p.Desk(), "real.sock")))
	must(os.Symlink("real.sock", sock))
	must(os.Chmod(p.Sources(), 0o644))                                                 // K5
	must(os.WriteFile(p.ConfigFile(), []byte("[push]\nurl = \"https://x\"\n"), 0o600)) // reserved file
	must(os.MkdirAll(p.State, 0o755))
	must(os.WriteFile(p.State+"/audit.log", nil, 0o644))
	must(os.Chmod(p.State+"/audit.log", 0o644))
	e.Agent = func() (Binary, error) { return Binary{Path: "/usr/local/bin/collie-agent", Version: "0.0.9"}, nil }
	e.Systemd = func(context.Context) (Systemd, error) {
		return fakeSystemd{
			"collie.service":           {Load: "loaded", Active: "inactive", Sub: "dead", FileState: "enabled", Path: "/usr/lib/systemd/user/collie.service"},
			"collie-agent@.socket":     {Path: "/usr/lib/systemd/user/collie-agent@.socket"},
			"collie-agent@.service":    {Path: "/usr/lib/systemd/user/collie-agent@.service"},
			"collie-agent@demo.socket": {Load: "loaded", Active: "active", Sub: "listening", FileState: "disabled", Path: "/usr/lib/systemd/user/collie-agent@.socket"},
		}, nil
	}
	e.Logind = func(context.Context, int) (bool, error) {
		return false, errors.New("The name org.freedesktop.login1 was not provided by any .service files")
	}
	e.Journald = func() error { return errors.New("nothing listens at /run/systemd/journal/socket") }
	e.Daemon = fakeDaemon{err: control.ErrNotRunning}
	e.Push = func(context.Context) (control.PushStatus, error) { return control.PushStatus{}, control.ErrNotRunning }
	return e, root
}

// TestBroken_T3_K5_L4: every broken part fails or warns with the exact
// reason and the fix, and the report fails.
func TestBroken_T3_K5_L4(t *testing.T) {
	e, root := broken(t)
	rows := run(t, e, "")
	if Failed(rows) == 0 {
		t.Fatal("no row failed")
	}
	for _, r := range rows {
		if r.Status != OK && r.Fix == "" {
			t.Errorf("row %s %s is %s without a fix", r.Check, r.Subject, r.Status)
		}
	}
	golden(t, "broken.txt", text(t, rows), root)

	var b bytes.Buffer
	if err := WriteJSON(&b, rows); err != nil {
		t.Fatal(err)
	}
	golden(t, "broken.json", b.String(), root)
}

// TestCheckFlag: --check runs one check; an unknown name lists the checks.
func TestCheckFlag(t *testing.T) {
	e, root := broken(t)
	golden(t, "check-durable-socket.txt", text(t, run(t, e, "durable-socket")), root)

	_, err := Run(context.Background(), e, "nope")
	want := `there is no check "nope"; the checks are: binary, config, sources, durable-socket, agent-config, desk, state-dir, audit-log, units, linger, journald, daemon, device-listener, public_url, push, config-reload, agent-login, coding-agents, runs`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	_, err = Run(context.Background(), e, "config", "deamon")
	if err == nil || !strings.HasPrefix(err.Error(), `there is no check "deamon"; did you mean daemon? The checks are: binary,`) {
		t.Errorf("err = %v, want did you mean daemon", err)
	}
}

// TestCheckFlagRepeated_L4: --check given twice runs both checks, in the
// table's order, each once (it ran the last one given only).
func TestCheckFlagRepeated_L4(t *testing.T) {
	e, _ := broken(t)
	rows := run(t, e, "daemon", "config", "daemon")
	var got []string
	for _, r := range rows {
		if len(got) == 0 || got[len(got)-1] != r.Check {
			got = append(got, r.Check)
		}
	}
	if strings.Join(got, " ") != "config daemon" {
		t.Errorf("checks run: %q; want config then daemon", got)
	}
}

// TestNoPaths: without XDG_RUNTIME_DIR the config row fails with the
// reason and the rows that need the paths skip; nothing panics.
func TestNoPaths(t *testing.T) {
	e, _ := healthy(t)
	e.Paths, e.PathsErr = config.Paths{}, errors.New("XDG_RUNTIME_DIR is not set; log in through a session, or run: export XDG_RUNTIME_DIR=/run/user/$(id -u)")
	e.Daemon = nil
	golden(t, "no-paths.txt", text(t, run(t, e, "")), "/nonexistent-root")
}

// TestSocketFix_T3_T4: every reason of T3 and T4, exactly as sockpath and
// the bridge word it, gets its fix; only a missing agent is a warning.
func TestSocketFix_T3_T4(t *testing.T) {
	e := &Env{Paths: config.Paths{Runtime: "/run/user/1000"}}
	desk := sources.Source{Name: "app", Socket: "/run/user/1000/desk/app.sock"}
	other := sources.Source{Name: "x", Socket: "/srv/x/x.sock"}
	tests := []struct {
		name   string
		src    sources.Source
		code   sockpath.Code
		part   string
		reason string
		fix    string
		fails  bool
	}{
		{"T3_symlink_socket", desk, sockpath.CodeSymlink, "/run/user/1000/desk/app.sock", "socket-not-private: /run/user/1000/desk/app.sock is a symlink",
			"rm /run/user/1000/desk/app.sock && systemctl --user restart collie-agent@app.socket", true},
		{"T3_symlink_folder", other, sockpath.CodeSymlink, "/srv/x", "socket-not-private: /srv/x is a symlink",
			"attach the agent by a path without links: collie durable detach x && collie durable attach x --socket REAL-PATH", true},
		{"T3_folder_mode", desk, sockpath.CodeFolderMode, "/run/user/1000/desk", "the socket's folder /run/user/1000/desk has mode 0755, not 0700", "chmod 0700 /run/user/1000/desk", true},
		{"T3_folder_owner", other, sockpath.CodeFolderOwner, "/srv/x", "the socket's folder /srv/x belongs to user 0, not to 1000",
			"give the agent a socket in a folder of your own: collie durable detach x && collie durable attach x --socket /run/user/1000/desk/x.sock", true},
		{"T3_folder_not_dir", other, sockpath.CodeNotDirectory, "/srv/x", "the socket's folder /srv/x is not a directory",
			"give the agent a socket in a folder of your own: collie durable detach x && collie durable attach x --socket /run/user/1000/desk/x.sock", true},
		{"T3_above_writable", other, sockpath.CodeWritable, "/srv", "/srv has mode 0775, so group or others can write to it", "chmod go-w /srv", true},
		{"T3_not_socket", desk, sockpath.CodeNotSocket, "/run/user/1000/desk/app.sock", "the path is not a socket", "rm /run/user/1000/desk/app.sock && systemctl --user restart collie-agent@app.socket", true},
		{"T3_socket_owner", desk, sockpath.CodeSocketOwner, "/run/user/1000/desk/app.sock", "the socket belongs to user 0, not to 1000", "the socket is another user's; detach it: collie durable detach app", true},
		{"T3_socket_mode", desk, sockpath.CodeSocketMode, "/run/user/1000/desk/app.sock", "the socket has mode 0666, not 0600", "chmod 0600 /run/user/1000/desk/app.sock, and make the agent create it 0600 (SocketMode=0600)", true},
		{"T4_no_socket_desk", desk, sockpath.CodeNoSocket, "/run/user/1000/desk/app.sock", "no socket at /run/user/1000/desk/app.sock", "systemctl --user enable --now collie-agent@app.socket", false},
		{"T4_no_socket_elsewhere", other, sockpath.CodeNoSocket, "/srv/x/x.sock", "no socket at /srv/x/x.sock", "start the agent that listens at /srv/x/x.sock", false},
		{"T4_nothing_listening", desk, sockpath.CodeNotListening, "/run/user/1000/desk/app.sock", "nothing is listening at /run/user/1000/desk/app.sock; start the agent (or its .socket unit)",
			"systemctl --user enable --now collie-agent@app.socket", false},
		{"T2_not_clean", other, sockpath.CodeForm, "", `the socket path /srv/x/../x/x.sock is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`,
			"attach the agent by the path it listens on, absolute and clean: collie durable detach x && collie durable attach x --socket FULL-PATH", true},
		{"T2_relative", other, sockpath.CodeForm, "", "the socket path x/x.sock is not absolute; give the full path",
			"attach the agent by the path it listens on, absolute and clean: collie durable detach x && collie durable attach x --socket FULL-PATH", true},
		{"L3_listener_not_you", desk, sockpath.CodeListener, "/run/user/1000/desk/app.sock", "the socket's listener is not you: peer uid 0, not 1000", "the socket is another user's; detach it: collie durable detach app", true},
	}
	if fix, fails := socketFix(e, desk, nil); fix != "systemctl --user restart collie-agent@app.socket; if that does not help, see collie-durable(7)" || !fails {
		t.Errorf("socketFix(no walk error) = %q, %v; want the restart, failing", fix, fails)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fix, fails := socketFix(e, tt.src, &sockpath.Error{Path: tt.src.Socket, Code: tt.code, Part: tt.part, Reason: tt.reason})
			if fix != tt.fix || fails != tt.fails {
				t.Errorf("socketFix(%q) = %q, fails %v; want %q, fails %v", tt.reason, fix, fails, tt.fix, tt.fails)
			}
		})
	}
}

// TestSourcesMode_K5: any permission for group or others fails the row,
// and the message says which.
func TestSourcesMode_K5(t *testing.T) {
	for _, tt := range []struct {
		mode os.FileMode
		want string
	}{
		{0o640, "has mode 0640, so group or others can read it; it can hold tokens"},
		{0o604, "has mode 0604, so group or others can read it; it can hold tokens"},
		{0o620, "has mode 0620, so group or others can write to it; it can hold tokens"},
		{0o610, "has mode 0610, so group or others can run it; it can hold tokens"},
	} {
		e, _ := healthy(t)
		if err := os.Chmod(e.Paths.Sources(), tt.mode); err != nil {
			t.Fatal(err)
		}
		rows := run(t, e, "sources")
		if len(rows) != 1 || rows[0].Status != Fail || !strings.HasSuffix(rows[0].Message, tt.want) || rows[0].Fix != "chmod 0600 "+e.Paths.Sources() {
			t.Errorf("mode %04o: rows = %+v; want one fail ending %q with fix chmod 0600", tt.mode, rows, tt.want)
		}
	}
}

// TestDeviceListener: [devices] of config.toml as the daemon uses it
// (loopback, or TLS beyond it), and a listener while the daemon runs.
func TestDeviceListener(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		dial       error
		daemonDown bool
		status     Status
		message    string
	}{
		{name: "default", status: OK, message: "listening on 127.0.0.1:8780 (plain HTTP, loopback only)"},
		{name: "off", toml: "[devices]\nlisten = \"\"\n", status: OK, message: "the device API is off"},
		{name: "tls_beyond_loopback", toml: "[devices]\nlisten = \"0.0.0.0:9443\"\n", status: OK, message: "listening on 0.0.0.0:9443 (TLS with a self-signed certificate)"},
		{name: "plain_http_beyond_loopback", toml: "[devices]\nlisten = \"192.0.2.1:80\"\ntls = \"off\"\n", status: Fail,
			message: "plain HTTP is refused on 192.0.2.1:80, which is reachable beyond this machine"},
		{name: "unknown_tls", toml: "[devices]\ntls = \"maybe\"\n", status: Fail, message: `tls = "maybe" in [devices] is not known`},
		{name: "cert_without_key", toml: "[devices]\ntls_cert = \"/c.pem\"\n", status: Fail, message: "[devices] has one of tls_cert and tls_key"},
		{name: "ephemeral_port", toml: "[devices]\nlisten = \"127.0.0.1:0\"\n", status: OK, message: "the device API listens on a port the kernel chose"},
		{name: "nothing_listens", dial: errors.New("connection refused"), status: Fail, message: "the daemon runs, but nothing listens on 127.0.0.1:8780"},
		{name: "daemon_down", daemonDown: true, status: Skip, message: "skipped: the daemon is not running"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := healthy(t)
			if tt.toml != "" {
				if err := os.WriteFile(e.Paths.ConfigFile(), []byte(tt.toml), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var dialed string
			e.Dial = func(_ context.Context, addr string) error { dialed = addr; return tt.dial }
			if tt.daemonDown {
				e.Daemon = fakeDaemon{err: control.ErrNotRunning}
			}
			rows := run(t, e, "device-listener")
			if len(rows) != 1 || rows[0].Status != tt.status || !strings.HasPrefix(rows[0].Message, tt.message) || (tt.status != OK && rows[0].Fix == "") {
				t.Fatalf("rows = %+v; want one %s row starting %q, with a fix unless ok", rows, tt.status, tt.message)
			}
			if tt.name == "tls_beyond_loopback" && dialed != "127.0.0.1:9443" {
				t.Errorf("dialed %q; a listener on every address is reached on loopback", dialed)
			}
		})
	}
}

// brokenAgent is a broken agent: a typo in NAME.toml, so
// collie-agent@demo.service fails at every start and its socket, enabled,
// stops after too many; the bridge saw the connection reset.
func brokenAgent(t *testing.T, socketActive string) (*Env, string) {
	e, root := healthy(t)
	sock := filepath.Join(e.Paths.Desk(), "demo.sock")
	typo := errors.New(root + `/config/collie-agent/demo.toml, line 2: unknown setting "titel"; fix the file (see collie-agent(1))`)
	e.AgentCheck = func(context.Context, string) (string, error) { return "", typo }
	sd := fakeSystemd{
		"collie.service":            {Load: "loaded", Active: "active", Sub: "running", FileState: "enabled", Path: "/usr/lib/systemd/user/collie.service"},
		"collie-agent@.socket":      {Path: "/usr/lib/systemd/user/collie-agent@.socket", FileState: "disabled"},
		"collie-agent@.service":     {Path: "/usr/lib/systemd/user/collie-agent@.service", FileState: "static"},
		"collie-agent@demo.socket":  {Load: "loaded", Active: socketActive, Sub: map[string]string{"failed": "failed", "active": "listening"}[socketActive], FileState: "enabled", Path: "/usr/lib/systemd/user/collie-agent@.socket"},
		"collie-agent@demo.service": {Load: "loaded", Active: "failed", Sub: "failed", FileState: "static", Path: "/usr/lib/systemd/user/collie-agent@.service"},
	}
	e.Systemd = func(context.Context) (Systemd, error) { return sd, nil }
	e.Probe = func(context.Context, string) (string, error) {
		return "", errors.New("nothing is listening at " + sock + "; start the agent (or its .socket unit)")
	}
	e.Daemon = fakeDaemon{agents: []view.AgentStatus{{Name: "demo", Transport: "socket", Target: sock,
		Reason: "read unix @->" + sock + ": read: connection reset by peer"}}}
	return e, root
}

// TestBrokenAgent_L4: with a typo in the agent's
// NAME.toml, doctor names the file, line and setting from the agent's own
// check, tells the failed service from a disabled socket, points at the
// service's journal, and the daemon row does not show the raw socket
// error.
func TestBrokenAgent_L4(t *testing.T) {
	for _, socket := range []string{"failed", "active"} {
		t.Run("socket_"+socket, func(t *testing.T) {
			e, root := brokenAgent(t, socket)
			rows := run(t, e, "")
			out := text(t, rows)
			golden(t, "broken-agent-socket-"+socket+".txt", out, root)
			for _, bad := range []string{"enable --now collie-agent@demo.socket", "-u collie-agent@demo.socket", "connection reset by peer"} {
				if strings.Contains(out, bad) {
					t.Errorf("the report says %q:\n%s", bad, out)
				}
			}
			for _, want := range []string{`demo.toml, line 2: unknown setting "titel"`, "collie-agent@demo.service failed", "journalctl --user -u collie-agent@demo.service -p err"} {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestSourcesRefusedPath_T2: an entry of sources.json whose socket path is
// relative or not clean is a failing row of its own, named, with its fix;
// the others still load (T2).
func TestSourcesRefusedPath_T2(t *testing.T) {
	e, _ := healthy(t)
	data := `{"version":1,"sources":[{"name":"bad","socket":"/run/user/x/../desk/bad.sock"},{"name":"rel","socket":"desk/rel.sock"}]}`
	if err := os.WriteFile(e.Paths.Sources(), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := run(t, e, "sources")
	if len(rows) != 3 || rows[0].Status != OK {
		t.Fatalf("rows = %+v; want the file's ok row and one failing row for each refused entry", rows)
	}
	for i, name := range []string{"bad", "rel"} {
		r := rows[i+1]
		if r.Status != Fail || r.Subject != name || !strings.Contains(r.Message, "never connects") || !strings.Contains(r.Fix, "collie durable attach "+name) {
			t.Errorf("row for %s = %+v", name, r)
		}
	}
}
