package loginclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginstore"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// TestLoginCAFile_R2_K2: a bridge whose certificate the system does not
// trust (its own self-signed one, or a private CA's): login without
// --ca-file fails on the certificate and stores nothing; with it, login
// keeps the certificate beside the session (0600) and refresh and the
// agent API trust it afterwards; a later login without it that fails
// leaves session and certificate as they were.
func TestLoginCAFile_R2_K2(t *testing.T) {
	ca := tlstest.NewCA(t, t.TempDir())
	self := tlstest.SelfSigned(t, "127.0.0.1")
	for name, tc := range map[string]struct {
		cert tls.Certificate
		pem  []byte
	}{
		"private_ca":  {ca.Issue(t, "127.0.0.1"), ca.PEM},
		"self_signed": {self, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: self.Certificate[0]})},
	} {
		t.Run(name, func(t *testing.T) {
			env, transport := agentEnv(t)
			b := newTLSBridge(t, tc.cert)
			b.argsFile = filepath.Join(transport, "args")
			c := New(env)
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			if _, err := c.Login(context.Background(), b.url()); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Fatalf("login to an untrusted certificate = %v", errText(err))
			}
			if _, ok := loginstore.Read(env, Service); ok {
				t.Fatal("a session was stored")
			}

			c.CA = tc.pem
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			if _, err := c.Login(context.Background(), b.url()); err != nil {
				t.Fatalf("login with the certificate: %v", errText(err))
			}
			dir, _ := loginstore.Dir(env, Service)
			kept, err := os.ReadFile(filepath.Join(dir, CAName))
			if err != nil || !bytes.Equal(kept, tc.pem) {
				t.Fatalf("the certificate kept: %v", err)
			}
			if fi, _ := os.Stat(filepath.Join(dir, CAName)); fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %o", fi.Mode().Perm())
			}

			// A new process: refresh and the agent API over the kept certificate.
			b.seed(env, time.Now().Add(-time.Minute))
			later := New(env)
			if resp, err := askOnce(t, later); err != nil || resp.StatusCode != 200 {
				t.Fatalf("ask: %v", errText(err))
			}
			if _, refreshes, asks := b.counts(); refreshes != 1 || asks != 1 {
				t.Fatalf("refreshes %d asks %d", refreshes, asks)
			}

			// A login without the certificate that fails keeps both.
			path, _ := loginstore.Path(env, Service)
			before, _ := os.ReadFile(path)
			writeEnvelope(t, transport, envelopeFor("collie", b.grant(fromArgs), time.Now().Add(time.Minute)))
			if _, err := New(env).Login(context.Background(), b.url()); err == nil {
				t.Fatal("login without the certificate succeeded")
			}
			after, _ := os.ReadFile(path)
			still, _ := os.ReadFile(filepath.Join(dir, CAName))
			if !bytes.Equal(before, after) || !bytes.Equal(still, tc.pem) {
				t.Fatal("a failed login changed the session or the certificate")
			}
		})
	}
}

// TestReadCA_R2: a file that holds no certificate, or over 64 KiB, is
// refused.
func TestReadCA_R2(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"empty": "", "key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "big": strings.Repeat("x", maxCA+1)} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o600)
		if _, err := ReadCA(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
