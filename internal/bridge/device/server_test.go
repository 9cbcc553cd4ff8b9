package device

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

func TestListen(t *testing.T) {
	t.Run("loopback_plain_http", func(t *testing.T) {
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0"}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if !strings.HasPrefix(l.URL, "http://127.0.0.1:") || strings.HasSuffix(l.URL, ":0") || l.Fingerprint != "" {
			t.Fatalf("URL %q fingerprint %q", l.URL, l.Fingerprint)
		}
	})
	t.Run("beyond_loopback_plain_http_refused", func(t *testing.T) {
		_, err := Listen(ListenConfig{Addr: "0.0.0.0:0", TLS: "off"}, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "plain HTTP is refused on 0.0.0.0:0") || !strings.Contains(err.Error(), "config.toml") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("self_signed_made_once", func(t *testing.T) {
		state := t.TempDir()
		// The test listens on loopback only, with TLS asked for; beyond
		// loopback "auto" takes the same path.
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", TLS: "on"}, state)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if !strings.HasPrefix(l.URL, "https://") || len(l.Fingerprint) != 95 {
			t.Fatalf("URL %q fingerprint %q", l.URL, l.Fingerprint)
		}
		for _, f := range []string{"cert.pem", "key.pem"} {
			fi, err := os.Stat(filepath.Join(state, "tls", f))
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v %v, want mode 0600", f, fi, err)
			}
		}
		port := l.Addr().String()[strings.LastIndex(l.Addr().String(), ":"):]
		go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
		// A client that pins the fingerprint the pairing shows reaches it.
		var seen string
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // the test checks the fingerprint itself, below
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				seen = Fingerprint(tls.Certificate{Certificate: raw})
				return nil
			}}}}
		resp, err := c.Get("https://127.0.0.1" + port)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if seen != l.Fingerprint {
			t.Fatalf("served certificate %s, pairing shows %s", seen, l.Fingerprint)
		}
		// The same certificate next start.
		l2, err := Listen(ListenConfig{Addr: "127.0.0.1:0", TLS: "on"}, state)
		if err != nil {
			t.Fatal(err)
		}
		l2.Close()
		if l2.Fingerprint != l.Fingerprint {
			t.Fatal("a second start made a new certificate; paired devices would have to pair again")
		}
	})
	t.Run("own_certificate", func(t *testing.T) {
		dir := t.TempDir()
		ca := tlstest.NewCA(t, dir)
		cert := ca.Issue(t, "localhost")
		certFile, keyFile := writePair(t, dir, cert)
		l, err := Listen(ListenConfig{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if !strings.HasPrefix(l.URL, "https://") {
			t.Fatalf("URL = %s, want https with an own certificate", l.URL)
		}
		os.Chmod(keyFile, 0o644)
		if _, err := Listen(ListenConfig{Addr: "127.0.0.1:0", CertFile: certFile, KeyFile: keyFile}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "chmod 0600") {
			t.Fatalf("a key readable by others: err = %v", err)
		}
	})
	t.Run("bad_address", func(t *testing.T) {
		if _, err := Listen(ListenConfig{Addr: "8780"}, t.TempDir()); err == nil || !strings.Contains(err.Error(), "is not host:port") {
			t.Fatalf("err = %v", err)
		}
	})
}
