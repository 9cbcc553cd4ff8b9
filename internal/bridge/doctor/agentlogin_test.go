package doctor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
)

// TestAgentLoginRow: the agent-login row is ok when agent login
// is off and says how to turn it on; a key that cannot be read fails with
// the fix; a device API that is off is a warning (the agent surface is on
// its listener); with the daemon running it counts the live sessions.
func TestAgentLoginRow(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "platform.pub"), filepath.Join(dir, "bad.pub")
	os.WriteFile(good, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	os.WriteFile(bad, []byte("not a key\n"), 0o644)
	now := time.Now()
	sessions := []control.AgentSession{
		{ID: "a", RefreshExpires: now.Add(time.Hour)},
		{ID: "b", RefreshExpires: now.Add(time.Hour), Revoked: now},
		{ID: "c", RefreshExpires: now.Add(-time.Hour)},
	}
	for _, tc := range []struct {
		name, config string
		list         []control.AgentSession
		err          error
		status       Status
		want         string
	}{
		{"off", "", nil, nil, OK, "agent login is off (optional): to let agents on an agent platform log in with collie login, set platform_key_file"},
		{"bad_key", fmt.Sprintf("[agents]\nplatform_key_file = %q\n", bad), nil, nil, Fail, "the platform's key is not a PEM public key"},
		{"missing_key", fmt.Sprintf("[agents]\nplatform_key_file = %q\n", filepath.Join(dir, "none.pub")), nil, nil, Fail, "read the platform's key"},
		{"no_device_api", fmt.Sprintf("[devices]\nlisten = \"\"\n[agents]\nplatform_key_file = %q\n", good), nil, nil, Warn, "the device API is off"},
		{"on", fmt.Sprintf("[agents]\nplatform_key_file = %q\n", good), sessions, nil, OK, "agent login is on (the platform's key " + good + "); 1 live agent session(s)"},
		{"not_running", fmt.Sprintf("[agents]\nplatform_key_file = %q\n", good), nil, control.ErrNotRunning, OK, "the daemon is not running"},
		{"not_served", fmt.Sprintf("[agents]\nplatform_key_file = %q\n", good), nil, errors.New("agent sessions are off: the store could not be opened"), Warn, "the daemon does not serve it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := healthy(t)
			os.WriteFile(filepath.Join(e.Paths.Config, "config.toml"), []byte(tc.config), 0o600)
			e.AgentSessions = func(context.Context) ([]control.AgentSession, error) { return tc.list, tc.err }
			rows := run(t, e, "agent-login")
			if len(rows) != 1 {
				t.Fatalf("%d rows", len(rows))
			}
			r := rows[0]
			if r.Status != tc.status || (r.Status != OK && r.Fix == "") || !strings.Contains(r.Message, tc.want) {
				t.Fatalf("row %+v, want %s with %q", r, tc.status, tc.want)
			}
		})
	}
}
