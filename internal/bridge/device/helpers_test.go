package device

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// writePair writes cert's certificate and key as PEM files, the key 0600.
func writePair(t *testing.T, dir string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, "own.pem"), filepath.Join(dir, "own.key")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

// siteOf is the allow-list of an unstarted test server's listener, as
// Listen makes it for a real one.
func siteOf(t *testing.T, srv *httptest.Server) *policy.Site {
	t.Helper()
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewSite("http", host, port)
}
