package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// The set-ups the end-to-end tests share: the bridge under a real user
// manager (bridgeRig), the platform's side of agent login (platform), and
// the daemon run by hand in a home of its own (bareHome).

// bridgeRig is the bridge as shipped under a real systemd user manager:
// the built binaries, the units from the repository's systemd/ folder,
// and a context that ends with the test.
type bridgeRig struct {
	t   *testing.T
	um  *systemdtest.UserManager
	bin string
	ctx context.Context
}

// bridgeSetup says what startBridge installs and starts.
type bridgeSetup struct {
	units  []string          // the units to install, from systemd/
	files  map[string]string // files to write, by path under the home
	demo   bool              // enable collie-agent@demo.socket and attach it
	bridge bool              // start collie.service
}

// agentUnits are the agent's template units and the bridge's service.
var agentUnits = []string{"collie-agent@.socket", "collie-agent@.service", "collie.service"}

// loopbackConfig is a bridge config with the device API on loopback.
const loopbackConfig = "[devices]\nlisten = \"127.0.0.1:0\"\n"

// demoBridge is the usual set-up: the demo agent socket-activated and
// attached, the bridge running with the device API on loopback.
func demoBridge() bridgeSetup {
	return bridgeSetup{units: agentUnits, files: map[string]string{".config/collie/config.toml": loopbackConfig}, demo: true, bridge: true}
}

// startBridge builds the binaries, starts a user manager and sets it up
// as s says, within timeout.
func startBridge(t *testing.T, timeout time.Duration, s bridgeSetup) *bridgeRig {
	t.Helper()
	r := &bridgeRig{t: t, bin: build(t), um: systemdtest.Start(t)}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	r.ctx = ctx
	for _, name := range s.units {
		r.um.InstallUnit(name, unit(t, name, r.bin))
	}
	for path, content := range s.files {
		r.writeFile(path, content)
	}
	if s.demo {
		r.must(r.um.Systemctl(ctx, "enable", "--now", "collie-agent@demo.socket"))
		r.collie("durable", "attach", "demo", "--socket", r.um.RuntimeDir+"/desk/demo.sock")
	}
	if s.bridge {
		r.must(r.um.Systemctl(ctx, "start", "collie.service"))
	}
	return r
}

// writeFile writes content at path under the home, as the user.
func (r *bridgeRig) writeFile(path, content string) {
	r.t.Helper()
	full := filepath.Join(r.um.Home, path)
	if err := r.um.MkdirAll(filepath.Dir(full)); err != nil {
		r.t.Fatal(err)
	}
	if err := r.um.WriteFile(full, []byte(content), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// must fails the test when a command failed, with its output.
func (r *bridgeRig) must(out string, err error) string {
	r.t.Helper()
	if err != nil {
		r.t.Fatalf("%v\n%s", err, out)
	}
	return out
}

// run runs the built collie as the user.
func (r *bridgeRig) run(args ...string) (string, error) {
	return r.um.Run(r.ctx, filepath.Join(r.bin, "collie"), args...)
}

// collie runs the built collie as the user; a failure fails the test.
func (r *bridgeRig) collie(args ...string) string {
	r.t.Helper()
	return r.must(r.run(args...))
}

// pair pairs a device called name through collie pair --local.
func (r *bridgeRig) pair(name string) (*client, device.PairReply) {
	r.t.Helper()
	return pairDevice(r.t, r.collie("pair", "--local", "--json"), name)
}

// platform is the agent platform's key pair: the bridge trusts keyFile
// (the public half, in the user's config folder); the raft double signs
// with the private half.
type platform struct {
	keyFile string
	privDER []byte
}

// newPlatform makes the platform's key and writes its public half where
// the bridge's config can name it.
func newPlatform(t *testing.T, um *systemdtest.UserManager) platform {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(pub)
	privDER, _ := x509.MarshalPKCS8PrivateKey(priv)
	p := platform{keyFile: filepath.Join(um.Home, ".config/collie/platform.pub"), privDER: privDER}
	if err := um.MkdirAll(filepath.Dir(p.keyFile)); err != nil {
		t.Fatal(err)
	}
	if err := um.WriteFile(p.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentEnv is the environment of Agent-7 on the platform: its home and
// the platform's transport folder with the raft double, which reaches the
// bridge at base. Nothing of the human's HOME or XDG.
func (p platform) agentEnv(t *testing.T, base string) []string {
	t.Helper()
	root := t.TempDir()
	slock, transport := filepath.Join(root, "slock"), filepath.Join(root, "transport")
	for _, d := range []string{slock, transport} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(transport, "raft"), "./testdata/raftdouble").CombinedOutput(); err != nil {
		t.Fatalf("build the raft double: %v\n%s", err, out)
	}
	for name, content := range map[string]string{
		"platform.key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p.privDER})),
		"identity":     "srv-1\nAgent-7\napp-1\n",
		"bridge.url":   base,
	} {
		if err := os.WriteFile(filepath.Join(transport, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"PATH=/usr/bin:/bin", "SLOCK_CLI_TRANSPORT_DIR=" + transport, "SLOCK_HOME=" + slock, "SLOCK_AGENT_ID=Agent-7"}
}

// runIn runs bin's collie with env and returns its output and exit code;
// a command that cannot start fails the test.
func runIn(t *testing.T, ctx context.Context, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "collie"), args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// bareHome is collie daemon run by hand, as collie.service runs it, in a
// home of its own: the built collie, the config and state folders, and a
// short runtime folder (a socket path has 108 bytes).
type bareHome struct {
	t                          *testing.T
	ctx                        context.Context
	bin, home, run, cfg, state string
	env                        []string
}

// newBareHome builds collie and makes the folders; prefix names the
// runtime folder.
func newBareHome(t *testing.T, ctx context.Context, prefix string) *bareHome {
	t.Helper()
	bin := t.TempDir()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/collie")
	cmd.Dir = "../../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	home := t.TempDir()
	run, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	h := &bareHome{t: t, ctx: ctx, bin: bin, home: home, run: run,
		cfg: filepath.Join(home, "config", "collie"), state: filepath.Join(home, "state", "collie")}
	for _, d := range []string{h.cfg, h.state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "XDG_RUNTIME_DIR=" + run,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	return h
}

// write writes a file; a failure fails the test.
func (h *bareHome) write(path, content string) {
	h.t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// control is a client of the daemon's control socket.
func (h *bareHome) control() *control.Client {
	return control.NewClient(filepath.Join(h.run, "collie", "control.sock"))
}

// daemon starts collie daemon with its stderr in log (when not nil) and
// returns once its control socket answers.
func (h *bareHome) daemon(log *strings.Builder) *exec.Cmd {
	h.t.Helper()
	d := exec.CommandContext(h.ctx, filepath.Join(h.bin, "collie"), "daemon")
	d.Env = h.env
	if log != nil {
		d.Stderr = log
	}
	if err := d.Start(); err != nil {
		h.t.Fatal(err)
	}
	ctl := h.control()
	waitFor(h.t, loadGuard, "the daemon's control socket", func() bool {
		_, err := ctl.Agents(h.ctx)
		return err == nil
	})
	return d
}

// collie runs collie with the home's environment and returns its
// standard output; a failure fails the test.
func (h *bareHome) collie(args ...string) string {
	h.t.Helper()
	c := exec.CommandContext(h.ctx, filepath.Join(h.bin, "collie"), args...)
	c.Env = h.env
	out, err := c.Output()
	if err != nil {
		h.t.Fatalf("collie %v: %v", args, err)
	}
	return string(out)
}
