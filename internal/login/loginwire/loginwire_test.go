package loginwire

import (
	"strings"
	"testing"
)

// TestProof_R5: the S256 proof and the shapes the service accepts before
// it hashes anything.
func TestProof_R5(t *testing.T) {
	// RFC 7636 appendix B.
	if got := Challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"); got != "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM" {
		t.Fatalf("Challenge = %s", got)
	}
	verifiers := []struct {
		v  string
		ok bool
	}{
		{strings.Repeat("a", 43), true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 42), false},
		{strings.Repeat("a", 129), false},
		{strings.Repeat("a", 42) + "~", true},
		{strings.Repeat("a", 42) + "+", false},
		{strings.Repeat("a", 42) + "=", false},
		{"", false},
	}
	for _, c := range verifiers {
		if ValidVerifier(c.v) != c.ok {
			t.Errorf("ValidVerifier(%q) = %v", c.v, !c.ok)
		}
	}
	challenges := []struct {
		c  string
		ok bool
	}{
		{Challenge("x"), true},
		{"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", true},
		{"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN", false}, // non-canonical last bits
		{"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM=", false},
		{"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM", false},
		{"short", false},
	}
	for _, c := range challenges {
		if ValidChallenge(c.c) != c.ok {
			t.Errorf("ValidChallenge(%q) = %v", c.c, !c.ok)
		}
	}
	ids := []struct {
		id string
		ok bool
	}{
		{"agent-7", true}, {"A", true}, {"a.b_c-d", true}, {strings.Repeat("a", 128), true},
		{"", false}, {".x", false}, {"-x", false}, {"_x", false}, {"../x", false}, {"a/b", false},
		{strings.Repeat("a", 129), false}, {"a b", false}, {"é", false},
	}
	for _, c := range ids {
		if ValidID(c.id) != c.ok {
			t.Errorf("ValidID(%q) = %v", c.id, !c.ok)
		}
	}
	for _, c := range []string{CodeInvalid, CodeExpired, CodeConsumed, CodeBindingMismatch, CodeGrantProofMismatch, CodeTemporarilyUnavailable} {
		if !KnownCode(c) {
			t.Errorf("%s is not in the closed set", c)
		}
	}
	if KnownCode("grant_invalid") || KnownCode("") {
		t.Error("a code outside the closed set was known")
	}
}
