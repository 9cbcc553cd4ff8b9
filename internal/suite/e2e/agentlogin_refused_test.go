package e2e

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// TestAgentLoginOffAndRelogin_R13: with agent login off on the bridge (no
// platform_key_file), collie login says the bridge's own reason, which
// the platform's wrapper passed on, and the bridge's journal says it too;
// once it is on, three logins of one agent leave one live session, and
// the agent's board goes when its session is revoked.
func TestAgentLoginOffAndRelogin_R13(t *testing.T) {
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must := func(out string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, _ := x509.MarshalPKIXPublicKey(pub)
	privDER, _ := x509.MarshalPKCS8PrivateKey(priv)
	keyFile := filepath.Join(um.Home, ".config/collie/platform.pub")
	cfg := filepath.Join(um.Home, ".config/collie/config.toml")
	if err := um.MkdirAll(filepath.Dir(cfg)); err != nil {
		t.Fatal(err)
	}
	if err := um.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := func(agents string) {
		t.Helper()
		if err := um.WriteFile(cfg, fmt.Appendf(nil, "[devices]\nlisten = \"127.0.0.1:%d\"\n\n%s[push]\ndesktop = false\nwebpush = false\n", port, agents), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config("")
	um.InstallUnit("collie.service", unit(t, "collie.service", bin))
	must(um.Systemctl(ctx, "start", "collie.service"))

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
		"platform.key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})),
		"identity":     "srv-1\nAgent-7\napp-1\n",
		"bridge.url":   base,
	} {
		if err := os.WriteFile(filepath.Join(transport, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agent := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "collie"), args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "SLOCK_CLI_TRANSPORT_DIR=" + transport, "SLOCK_HOME=" + slock, "SLOCK_AGENT_ID=Agent-7"}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return out.String(), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}

	// Agent login off: the bridge's sentence reaches the agent and its
	// user's journal.
	const why = "agent login is off on this bridge"
	var out string
	var code int
	waitFor(t, 20*time.Second, "collie login to say the bridge's reason", func() bool {
		out, code = agent("login", "--url", base)
		return strings.Contains(out, why)
	})
	if code != 1 || !strings.Contains(out, why) || !strings.Contains(out, "platform_key_file") || strings.Contains(out, "collie app is installed") {
		t.Fatalf("collie login with agent login off: exit %d, want 1 and the bridge's reason\n%s", code, out)
	}
	found := false
	for _, e := range userJournal(t, ctx, um, "--user-unit", "collie.service") {
		if m, ok := e["MESSAGE"].(string); ok && strings.Contains(m, why) {
			found = true
		}
	}
	if !found {
		t.Fatal("the bridge's journal does not say why the agent-login action was refused")
	}

	// On: three logins, one live session.
	config(fmt.Sprintf("[agents]\nplatform_key_file = %q\n\n", keyFile))
	must(um.Systemctl(ctx, "restart", "collie.service"))
	waitFor(t, 20*time.Second, "the first login after the restart", func() bool {
		_, code := agent("login", "--url", base)
		return code == 0
	})
	for range 2 {
		if out, code := agent("login", "--url", base); code != 0 {
			t.Fatalf("collie login: exit %d\n%s", code, out)
		}
	}
	var sessions []control.AgentSession
	listed := must(um.Run(ctx, filepath.Join(bin, "collie"), "agents", "list", "--json"))
	if err := json.Unmarshal([]byte(listed), &sessions); err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, s := range sessions {
		if s.Revoked.IsZero() {
			live++
		} else if s.RevokedWhy != "a newer login" {
			t.Fatalf("a session revoked for %q, want a newer login: %s", s.RevokedWhy, listed)
		}
	}
	if len(sessions) != 3 || live != 1 {
		t.Fatalf("three logins left %d sessions, %d live; want 3, 1 live\n%s", len(sessions), live, listed)
	}
	if out, code := agent("ask", "--yes-no", "--timeout", "1s", "Still me?"); code != 3 {
		t.Fatalf("ask with the last login's session: exit %d, want 3 (timed out)\n%s", code, out)
	}
	// The agent's board is shown while it has a live session, and released
	// when it has none.
	shown := func() bool {
		return strings.Contains(must(um.Run(ctx, filepath.Join(bin, "collie"), "durable", "list")), "agent-session")
	}
	if !shown() {
		t.Fatal("the agent's board is not listed after its ask")
	}
	must(um.Run(ctx, filepath.Join(bin, "collie"), "agents", "revoke", "Agent-7"))
	waitFor(t, 20*time.Second, "the revoked agent's board to go", func() bool { return !shown() })
}
