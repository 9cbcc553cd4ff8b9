package loginclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/cli/hint"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// loginSetup is an agent environment whose raft double hands out a grant
// the bridge double binds to the challenge raft was given.
func loginSetup(t *testing.T) (*Client, *bridge, string) {
	t.Helper()
	env, transport := agentEnv(t)
	b := newBridge(t)
	b.argsFile = filepath.Join(transport, "args")
	c := New(env)
	return c, b, transport
}

func writeEnvelope(t *testing.T, transport, envelope string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(transport, "envelope.json"), []byte(envelope), 0o600); err != nil {
		t.Fatal(err)
	}
}

// errText is the error as the user sees it: message and hint.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error() + "\n" + hint.Of(err)
}

// TestLogin_R2_R5: the whole flow against the doubles: raft gets exactly
// the arguments, with only the challenge; exchange carries exactly the
// grant and the verifier whose challenge that was; the session is stored
// with api_base; nothing shown carries a credential.
func TestLogin_R2_R5(t *testing.T) {
	c, b, transport := loginSetup(t)
	g := b.grant(fromArgs)
	writeEnvelope(t, transport, envelopeFor("collie", g, time.Now().Add(300*time.Second)))
	var exchangeBody []byte
	b.override[ExchangePath] = func(w http.ResponseWriter, r *http.Request) {
		exchangeBody, _ = readAll(r)
		r.Body = ioNopCloser(exchangeBody)
		delete(b.override, ExchangePath)
		b.serve(w, r)
	}
	rec, err := c.Login(context.Background(), b.url())
	if err != nil {
		t.Fatalf("Login: %v", errText(err))
	}
	args, _ := os.ReadFile(filepath.Join(transport, "args"))
	lines := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
	if len(lines) != 9 || strings.Join(lines[:8], " ") != "integration invoke --service collie --action agent-login --json --data-json" {
		t.Fatalf("raft was run with %q", lines)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(lines[8]), &data); err != nil || len(data) != 3 || data["schema"] != SchemaLoginRequest || data["code_challenge_method"] != "S256" {
		t.Fatalf("raft's data: %s", lines[8])
	}
	var ex map[string]string
	if err := json.Unmarshal(exchangeBody, &ex); err != nil || len(ex) != 3 || ex["schema"] != SchemaExchange || ex["grant"] != g ||
		Challenge(ex["code_verifier"]) != data["code_challenge"] {
		t.Fatalf("the exchange's body: %s", exchangeBody)
	}
	if !strings.HasPrefix(string(exchangeBody), `{"schema":`) {
		t.Fatalf("the exchange's keys are out of order: %s", exchangeBody)
	}
	if strings.Contains(string(args), ex["code_verifier"]) {
		t.Fatal("the verifier passed through the platform")
	}
	stored, ok := loginstore.Read(c.Env, Service)
	if !ok || stored.AccessToken != rec.AccessToken || stored.APIBase != b.url() || stored.Service != "collie" {
		t.Fatalf("stored %+v, %v", stored, ok)
	}
	b.noSecrets(t, errText(err))
}

// TestLoginStartsAfresh_R2: a second login replaces the session without
// reading or refreshing the old one, even a broken one.
func TestLoginStartsAfresh_R2(t *testing.T) {
	c, b, transport := loginSetup(t)
	path, _ := loginstore.Path(c.Env, Service)
	os.MkdirAll(filepath.Dir(path), 0o700)
	os.WriteFile(path, []byte("{broken"), 0o600)
	g := b.grant(fromArgs)
	writeEnvelope(t, transport, envelopeFor("collie", g, time.Now().Add(time.Minute)))
	if _, err := c.Login(context.Background(), b.url()); err != nil {
		t.Fatal(errText(err))
	}
	if _, refreshes, _ := b.counts(); refreshes != 0 {
		t.Fatalf("login refreshed %d times", refreshes)
	}
	if _, ok := loginstore.Read(c.Env, Service); !ok {
		t.Fatal("no session after login")
	}
}

// TestLoginRefusedKeepsOldSession_R2_R13: every way login fails leaves the
// session stored before byte-identical, and no error carries a credential
// or the raft wrapper's output.
func TestLoginRefusedKeepsOldSession_R2_R13(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, b *bridge, transport string)
		want  string
	}{
		{"raft_exits_nonzero", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, `{"ok":true,"secret":"STDOUT-SECRET-GRANT"}`)
			os.WriteFile(filepath.Join(transport, "exit"), []byte("3"), 0o600)
		}, "exit status 3"},
		{"raft_prints_no_json", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, "STDOUT-SECRET-GRANT")
		}, "not a JSON object"},
		{"envelope_extra_member", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, strings.Replace(envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)), `"ok":true`, `"ok":true,"x":"STDOUT-SECRET-GRANT"`, 1))
		}, "a member not in the schema"},
		{"grant_replayed", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, envelopeFor("collie", "GRANT-never-issued", time.Now().Add(time.Minute)))
		}, "consumed"},
		{"proof_mismatch", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, envelopeFor("collie", b.grant("another-challenge"), time.Now().Add(time.Minute)))
		}, "grant_proof_mismatch"},
		{"session_unknown_field", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			b.override[ExchangePath] = sessionReplying(b, func(m map[string]any) { m["scope"] = "x" })
		}, "a member not in the schema"},
		{"session_already_expired", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			b.override[ExchangePath] = sessionReplying(b, func(m map[string]any) { m["access_expires_at"] = "2020-01-01T00:00:00Z" })
		}, "already expired"},
		{"exchange_5xx", func(t *testing.T, b *bridge, transport string) {
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			b.override[ExchangePath] = func(w http.ResponseWriter, r *http.Request) { b.fail(w, 503, "temporarily_unavailable") }
		}, "HTTP 503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, b, transport := loginSetup(t)
			old := b.seed(c.Env, time.Now().Add(time.Hour))
			path, _ := loginstore.Path(c.Env, Service)
			before, _ := os.ReadFile(path)
			tc.setup(t, b, transport)
			_, err := c.Login(context.Background(), b.url())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Login = %v, want an error with %q", errText(err), tc.want)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Fatal("the old session changed")
			}
			for _, s := range []string{"STDOUT-SECRET-GRANT", "STDERR-SECRET-GRANT", old.AccessToken, old.RefreshToken} {
				if strings.Contains(errText(err), s) {
					t.Fatalf("the error shows %q: %v", s, errText(err))
				}
			}
			b.noSecrets(t, errText(err))
		})
	}
}

// TestLoginChecksStoreFirst_R7: with SLOCK_HOME missing, login fails
// before raft runs, so no grant is spent on a session it cannot keep, and
// SLOCK_HOME is not made.
func TestLoginChecksStoreFirst_R7(t *testing.T) {
	c, b, transport := loginSetup(t)
	os.Remove(c.Env.Home)
	writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
	if _, err := c.Login(context.Background(), b.url()); err == nil {
		t.Fatal("login without SLOCK_HOME succeeded")
	}
	if _, err := os.Stat(filepath.Join(transport, "args")); err == nil {
		t.Fatal("raft ran")
	}
	if _, err := os.Stat(c.Env.Home); err == nil {
		t.Fatal("SLOCK_HOME was made")
	}
}

// sessionReplying is an exchange or refresh handler whose session reply
// is changed by change.
func sessionReplying(b *bridge, change func(map[string]any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		m := b.mint(time.Now())
		b.refreshes++
		b.mu.Unlock()
		change(m)
		json.NewEncoder(w).Encode(m)
	}
}

// TestAgentLoginNeedsVerifier_R5_R13: an intercepted grant without its
// verifier makes no session (the double refuses another verifier; the
// CLI's flow stored nothing).
func TestAgentLoginNeedsVerifier_R5_R13(t *testing.T) {
	c, b, _ := loginSetup(t)
	g := b.grant(Challenge("the-real-verifier"))
	_, err := c.tokenRequest(context.Background(), b.url(), ExchangePath, exchangeRequest{SchemaExchange, g, "a-guessed-verifier"}, "the grant exchange")
	var re *RefusedError
	if !errors.As(err, &re) || re.Code != "grant_proof_mismatch" {
		t.Fatalf("exchange without the verifier = %v", err)
	}
	if _, ok := loginstore.Read(c.Env, Service); ok {
		t.Fatal("a session was stored")
	}
	// The grant is spent: the right verifier now fails too (single use).
	_, err = c.tokenRequest(context.Background(), b.url(), ExchangePath, exchangeRequest{SchemaExchange, g, "the-real-verifier"}, "the grant exchange")
	if !errors.As(err, &re) || re.Code != "consumed" {
		t.Fatalf("replayed grant = %v", err)
	}
}

func readAll(r *http.Request) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r.Body)
	return b.Bytes(), err
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func ioNopCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }
