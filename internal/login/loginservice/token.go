package loginservice

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Token prefixes, so a secret scanner can tell Collie's credentials.
const (
	GrantPrefix   = "collie_g_"
	AccessPrefix  = "collie_a_"
	RefreshPrefix = "collie_r_"
)

// tokenBytes is the entropy of every token; tokenChars its unpadded
// base64url length.
const (
	tokenBytes = 32
	tokenChars = 43
)

// newToken returns a fresh token with prefix and the hex SHA-256 of it.
func newToken(prefix string) (token, digest string) {
	var b [tokenBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	token = prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, digestOf(token)
}

// digestOf is the hex SHA-256 of a token: all the store keeps of it.
func digestOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenDigest returns the digest of token when it has the shape of a token
// with prefix (the prefix, then 43 base64url characters), and false
// otherwise: a token of another kind, or anything else, is never looked up.
func tokenDigest(prefix, token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok || len(rest) != tokenChars {
		return "", false
	}
	for i := 0; i < len(rest); i++ {
		if !isB64URL(rest[i]) {
			return "", false
		}
	}
	return digestOf(token), true
}

func isB64URL(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// newChainID is a random 12-hex id, not a secret.
func newChainID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Validate reports whether every part of id follows the rule
// ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ (SLOCK_AGENT_ID's). The error names
// the part, never its value.
func (id Identity) Validate() error {
	for _, p := range []struct{ name, v string }{{"agent", id.Agent}, {"server", id.Server}, {"app", id.App}} {
		if !loginwire.ValidID(p.v) {
			return fmt.Errorf("the identity's %s id is not 1 to 128 of A-Z, a-z, 0-9, '.', '_', '-' starting with a letter or digit", p.name)
		}
	}
	return nil
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
