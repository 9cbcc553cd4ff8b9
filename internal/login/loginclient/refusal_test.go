package loginclient

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginstore"
)

// platformFailure is what the platform's CLI prints when a service's
// action answered status with body: with --json, an error envelope whose
// message carries the body.
func platformFailure(status, body string) string {
	msg, _ := json.Marshal("service action failed (HTTP " + status + "); response body: " + body)
	return `{"ok":false,"error":{"code":"INTEGRATION_INVOKE_FAILED","message":` + string(msg) + `,"fault_domain":null,"layer":null,"retryable":null,"effect":null,"correlation_id":null}}`
}

// TestLoginShowsBridgesReason_R6: when the agent-login action fails, the
// bridge's own refusal (its code and sentence, as the platform's wrapper
// passes it on) is what collie login says, cleaned as untrusted text and
// with the fix for its kind; nothing else the wrapper wrote is shown, and
// a sentence holding anything shaped like a credential is left out. The
// old session stays as it was.
func TestLoginShowsBridgesReason_R6(t *testing.T) {
	off := `{"error":{"code":"temporarily_unavailable","message":"agent login is off on this bridge: its user has not set platform_key_file in [agents] of config.toml (collie.toml(5))"}}`
	for _, tc := range []struct {
		name, stdout, stderr string
		want, notWant        []string
	}{
		{name: "the platform's JSON envelope on stderr", stderr: platformFailure("503", off),
			want:    []string{"HTTP 503, temporarily_unavailable", "agent login is off on this bridge: its user has not set platform_key_file", "ask the bridge's user"},
			notWant: []string{"collie app is installed", "INTEGRATION_INVOKE_FAILED"}},
		{name: "the platform's text on stderr", stderr: "Error: service action failed (HTTP 503); response body: " + off + "\nCode: INTEGRATION_INVOKE_FAILED\n",
			want: []string{"agent login is off on this bridge"}},
		{name: "an envelope on stdout", stdout: platformFailure("401", `{"error":{"code":"invalid","message":"the platform's assertion is not signed by the platform's key in [agents] platform_key_file"}}`),
			want: []string{"HTTP 401, invalid", "not signed by the platform's key", "platform's current key"}},
		{name: "a hostile sentence is cleaned", stderr: platformFailure("503", `{"error":{"code":"temporarily_unavailable","message":"off\u001b[2J\u202e now\nforged line"}}`),
			want: []string{"off"}, notWant: []string{"\x1b", "\u202e", "\nforged"}},
		{name: "a sentence with a credential is left out", stderr: platformFailure("503", `{"error":{"code":"temporarily_unavailable","message":"grant collie_g_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}`),
			want: []string{"HTTP 503, temporarily_unavailable"}, notWant: []string{"collie_g_"}},
		{name: "a code outside the set", stderr: platformFailure("500", `{"error":{"code":"boom","message":"secret internals"}}`),
			want: []string{"exit status 1", "collie app is installed"}, notWant: []string{"secret internals"}},
		{name: "no body", stderr: "Error: network down\n",
			want: []string{"exit status 1"}, notWant: []string{"network down"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, b, transport := loginSetup(t)
			old := b.seed(c.Env, time.Now().Add(time.Hour))
			for name, data := range map[string]string{"envelope.json": tc.stdout, "stderr.txt": tc.stderr, "exit": "1"} {
				if err := os.WriteFile(filepath.Join(transport, name), []byte(data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := c.Login(context.Background(), b.url())
			text := errText(err)
			if err == nil {
				t.Fatal("login succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("the error does not say %q:\n%s", w, text)
				}
			}
			for _, w := range append(tc.notWant, "STDERR-SECRET-GRANT") {
				if strings.Contains(text, w) {
					t.Errorf("the error shows %q:\n%s", w, text)
				}
			}
			if now, _ := loginstore.Read(c.Env, Service); now.AccessToken != old.AccessToken {
				t.Fatal("the old session changed")
			}
		})
	}
}
