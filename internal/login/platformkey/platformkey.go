// Package platformkey reads the agent platform's Ed25519 public key, with
// which the bridge checks an agent-login grant. It is apart from loginwire
// so that the client half, which never checks one, links no X.509.
package platformkey

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Load reads the platform's Ed25519 public key from a PEM file
// ("PUBLIC KEY", as `openssl pkey -pubout` writes it).
func Load(path string) (ed25519.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the platform's key %s: %w; check [agents] platform_key_file in config.toml", path, err)
	}
	return Parse(data)
}

// Parse parses a PEM "PUBLIC KEY" block holding an Ed25519 key.
func Parse(data []byte) (ed25519.PublicKey, error) {
	const fix = "give the platform's Ed25519 public key as PEM (-----BEGIN PUBLIC KEY-----), as `openssl pkey -pubout` writes it"
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("the platform's key is not a PEM public key; " + fix)
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the platform's key cannot be read (%v); %s", err, fix)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("the platform's key is not an Ed25519 key; " + fix)
	}
	return ek, nil
}
