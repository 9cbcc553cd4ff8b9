package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
)

// TestAgentLoginOffAndRelogin_R13: with agent login off on the bridge (no
// platform_key_file), collie login says the bridge's own reason, which
// the platform's wrapper passed on, and the bridge's journal says it too;
// once it is on, three logins of one agent leave one live session, and
// the agent's board goes when its session is revoked.
func TestAgentLoginOffAndRelogin_R13(t *testing.T) {
	r := startBridge(t, 3*time.Minute, bridgeSetup{units: []string{"collie.service"}})
	um, bin, ctx, must := r.um, r.bin, r.ctx, r.must
	plat := newPlatform(t, um)
	keyFile := plat.keyFile
	cfg := filepath.Join(um.Home, ".config/collie/config.toml")
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	config := func(agents string) {
		t.Helper()
		if err := um.WriteFile(cfg, fmt.Appendf(nil, "[devices]\nlisten = \"127.0.0.1:%d\"\n\n%s[push]\ndesktop = false\nwebpush = false\n", port, agents), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	config("")
	must(um.Systemctl(ctx, "start", "collie.service"))

	env := plat.agentEnv(t, base)
	agent := func(args ...string) (string, int) {
		t.Helper()
		return runIn(t, ctx, bin, env, args...)
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
