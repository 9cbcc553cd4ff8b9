package wire

import (
	"errors"
	"fmt"
	"strings"
)

// Token limits of K2, for the token transport (HTTPS).
const (
	MinTokenBytes = 32
	MaxTokenBytes = 4096
)

// CheckToken trims surrounding whitespace from a token and reports whether
// what is left follows K2: 32 to 4096 bytes of printable ASCII without
// spaces. Both ends use it: the bridge for a token it stores, an agent for
// the tokens it accepts. Its errors never contain the token (K5).
func CheckToken(raw string) (string, error) {
	tok := strings.TrimSpace(raw)
	if tok == "" {
		return "", errors.New("the token is empty; make one with: openssl rand -hex 32")
	}
	if len(tok) < MinTokenBytes {
		return "", fmt.Errorf("the token is %d bytes; it needs at least %d (make one with: openssl rand -hex 32)", len(tok), MinTokenBytes)
	}
	if len(tok) > MaxTokenBytes {
		return "", fmt.Errorf("the token is %d bytes; the limit is %d", len(tok), MaxTokenBytes)
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x21 || c > 0x7e {
			return "", fmt.Errorf("the token has a space, control or non-ASCII character at byte %d; use printable ASCII only (openssl rand -hex 32)", i+1)
		}
	}
	return tok, nil
}
