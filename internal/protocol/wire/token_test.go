package wire

import (
	"strings"
	"testing"
)

// TestCheckToken: K2's token rule, shared by the bridge (sources.json,
// collie durable attach) and the agent (COLLIE_TOKEN, COLLIE_TOKEN_NEXT);
// no error repeats the token (K5).
func TestCheckToken(t *testing.T) {
	good := strings.Repeat("ab", 16)
	tests := []struct {
		name, raw, want, err string
	}{
		{"K2_32_bytes", good, good, ""},
		{"K2_trimmed", " \t" + good + "\n", good, ""},
		{"K2_4096_bytes", strings.Repeat("x", 4096), strings.Repeat("x", 4096), ""},
		{"K2_empty", "  ", "", "the token is empty; make one with: openssl rand -hex 32"},
		{"K2_31_bytes", good[:31], "", "the token is 31 bytes; it needs at least 32 (make one with: openssl rand -hex 32)"},
		{"K2_4097_bytes", strings.Repeat("x", 4097), "", "the token is 4097 bytes; the limit is 4096"},
		{"K2_inner_space", good[:20] + " " + good[20:], "", "the token has a space, control or non-ASCII character at byte 21; use printable ASCII only (openssl rand -hex 32)"},
		{"K2_control", good + "\x7f", "", "at byte 33"},
		{"K2_non_ascii", good + "é", "", "at byte 33"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckToken(tt.raw)
			if tt.err == "" {
				if err != nil || got != tt.want {
					t.Fatalf("CheckToken = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || got != "" {
				t.Fatalf("CheckToken = %q, %v; want the error %q", got, err, tt.err)
			}
			if len(tt.raw) > 8 && strings.Contains(err.Error(), strings.TrimSpace(tt.raw)[:8]) {
				t.Fatalf("K5: the error repeats the token: %v", err)
			}
		})
	}
}
