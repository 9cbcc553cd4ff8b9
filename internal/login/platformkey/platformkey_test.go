package platformkey

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pub)
	good := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	path := filepath.Join(t.TempDir(), "platform.pem")
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := Load(path)
	if err != nil || !k.Equal(pub) {
		t.Fatalf("Load = %v, %v", k, err)
	}
	privDER, _ := x509.MarshalPKCS8PrivateKey(priv)
	for name, data := range map[string][]byte{
		"empty":       nil,
		"private key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}),
		"garbage":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("nope")}),
	} {
		if _, err := Parse(data); err == nil || !strings.Contains(err.Error(), "openssl pkey -pubout") {
			t.Errorf("%s: %v, want an error saying how to give the key", name, err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.pem")); err == nil || !strings.Contains(err.Error(), "platform_key_file") {
		t.Errorf("missing file: %v, want an error naming the setting", err)
	}
}
