package loginclient

import (
	"strings"
	"testing"
	"time"
)

var fuzzNow = time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)

// FuzzParseEnvelope: never panics; what it accepts has a grant a header
// can carry and an expiry in (now, now+GrantCeiling] (R2).
func FuzzParseEnvelope(f *testing.F) {
	f.Add([]byte(envelopeFor("collie", "GRANT-1", fuzzNow.Add(300*time.Second))))
	f.Add([]byte(`{"ok":false,"error":"x"}`))
	f.Add([]byte(`{"ok":true,"data":{"service":"collie","action":"agent-login","status":200,"result":{"schema":"raft-cli-agent-login-grant.v1","service":"collie","grant":"g","expires_at":"2026-12-02T19:05:00.5+00:00"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseEnvelope(data, "collie", fuzzNow)
		if err != nil {
			if strings.Contains(err.Error(), "{") {
				t.Fatalf("the error carries the input: %v", err)
			}
			return
		}
		if g.Grant == "" || strings.ContainsAny(g.Grant, " \n\"") || !g.ExpiresAt.After(fuzzNow) || g.ExpiresAt.Sub(fuzzNow) > GrantCeiling {
			t.Fatalf("accepted %+v", g)
		}
	})
}

// FuzzParseSession: never panics; what it accepts passes the store's check
// and is not expired (R9).
func FuzzParseSession(f *testing.F) {
	f.Add([]byte(`{"schema":"raft-cli-agent-session.v1","token_type":"Bearer","access_token":"a","access_expires_at":"2026-12-02T19:15:00Z","refresh_token":"r","refresh_expires_at":null}`))
	f.Add([]byte(`{"schema":"raft-cli-agent-session.v1","token_type":"Bearer","access_token":"a","access_expires_at":"2026-12-02T19:15:00Z","refresh_token":"r","refresh_expires_at":"2026-12-03T00:00:00-01:00","x":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSession(data, fuzzNow)
		if err != nil {
			return
		}
		if s.Check() != nil || !s.AccessExpiry().After(fuzzNow) {
			t.Fatalf("accepted %+v", s)
		}
		if exp, ok := s.RefreshExpiry(); ok && !exp.After(fuzzNow) {
			t.Fatalf("accepted an expired refresh token: %+v", s)
		}
	})
}
