package loginclient

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCheckBase_K2_R2: the bridge URL's rules, and the form stored.
func TestCheckBase_K2_R2(t *testing.T) {
	good := map[string]string{
		"https://bridge.example":       "https://bridge.example",
		"https://bridge.example:8443/": "https://bridge.example:8443",
		"http://127.0.0.1:7373":        "http://127.0.0.1:7373",
		"http://localhost:7373":        "http://localhost:7373",
		"https://[::1]:8443":           "https://[::1]:8443",
	}
	for in, want := range good {
		if got, err := CheckBase(in); err != nil || got != want {
			t.Errorf("CheckBase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "bridge.example", "ftp://h", "http://bridge.example:80", "http://10.0.0.1:80", "http://127.0.0.1",
		"https://user:SECRET@h", "https://h/path", "https://h?x=1", "https://h#f", "https://h:0", "https://h:65536", "https://h:08",
		"https:///x", "https://h /", "https://h\x00", "https://" + strings.Repeat("a", 2048), "https://h\u00e9"} {
		_, err := CheckBase(in)
		if err == nil {
			t.Errorf("CheckBase(%q) accepted", in)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("CheckBase's error repeats the URL: %v", err)
		}
	}
}

// TestPKCE_R2: the verifier is 64 random bytes in unpadded base64url (86
// characters, RFC 7636's 43 to 128), each new, and its challenge is S256.
func TestPKCE_R2(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		p := NewPKCE()
		raw, err := base64.RawURLEncoding.DecodeString(p.Verifier)
		if err != nil || len(raw) < 32 || len(p.Verifier) < 43 || len(p.Verifier) > 128 {
			t.Fatalf("verifier of %d characters, %d bytes: %v", len(p.Verifier), len(raw), err)
		}
		if seen[p.Verifier] {
			t.Fatal("a verifier repeated")
		}
		seen[p.Verifier] = true
		if p.Challenge != Challenge(p.Verifier) || strings.ContainsAny(p.Challenge, "+/=") {
			t.Fatalf("challenge %q", p.Challenge)
		}
	}
	// base64url(SHA-256) of a fixed verifier, computed apart (Python's hashlib).
	if got := Challenge("dBjftJeZ4CVP-mJ92K9vqXUq7HQkHfU3H5a3M3MowHo"); got != "Y4b1PK2syqjd1HE4wDEVVwDqCrznj8u56mVShJxhPHg" {
		t.Fatalf("Challenge = %s", got)
	}
}

// TestRaftArgs_R2: the wrapper's arguments, exactly, and the data's keys
// in order, with only the challenge.
func TestRaftArgs_R2(t *testing.T) {
	got := strings.Join(RaftArgs("collie", "CH_a-b"), "\n")
	want := strings.Join([]string{"integration", "invoke", "--service", "collie", "--action", "agent-login", "--json", "--data-json",
		`{"schema":"raft-cli-agent-login-request.v1","code_challenge":"CH_a-b","code_challenge_method":"S256"}`}, "\n")
	if got != want {
		t.Fatalf("RaftArgs =\n%s\nwant\n%s", got, want)
	}
}

// TestParseEnvelope_R2: only the exact envelope, closed at every level,
// with a grant expiring in the future and not too far.
func TestParseEnvelope_R2(t *testing.T) {
	now := time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)
	good := envelopeFor("collie", "GRANT-1", now.Add(300*time.Second))
	g, err := ParseEnvelope([]byte(good), "collie", now)
	if err != nil || g.Grant != "GRANT-1" {
		t.Fatalf("ParseEnvelope(good) = %+v, %v", g, err)
	}
	mod := func(old, new string) string {
		if !strings.Contains(good, old) {
			t.Fatalf("%q is not in the envelope", old)
		}
		return strings.Replace(good, old, new, 1)
	}
	bad := map[string]string{
		"not_json":            "raft: error",
		"empty":               "",
		"array":               "[]",
		"ok_false":            `{"ok":false,"error":{"code":"x"}}`,
		"ok_string":           mod(`"ok":true`, `"ok":"true"`),
		"ok_missing":          mod(`"ok":true,`, ``),
		"outer_extra":         mod(`{"ok":true,`, `{"ok":true,"x":1,`),
		"data_extra":          mod(`"status":200,`, `"status":200,"x":1,`),
		"result_extra":        mod(`"grant":`, `"x":1,"grant":`),
		"data_missing":        `{"ok":true}`,
		"data_null":           `{"ok":true,"data":null}`,
		"service_missing":     mod(`"data":{"service":"collie",`, `"data":{`),
		"service_other":       mod(`"data":{"service":"collie"`, `"data":{"service":"hands"`),
		"action_other":        mod(`"agent-login"`, `"other"`),
		"status_201":          mod(`200`, `201`),
		"status_string":       mod(`200`, `"200"`),
		"result_missing":      mod(`,"result":{"schema":"raft-cli-agent-login-grant.v1","service":"collie","grant":"GRANT-1","expires_at":"2026-12-02T19:05:00Z"}`, ``),
		"schema_other":        mod(`grant.v1`, `grant.v2`),
		"result_service":      mod(`"service":"collie","grant"`, `"service":"hands","grant"`),
		"grant_empty":         mod(`"GRANT-1"`, `""`),
		"grant_space":         mod(`"GRANT-1"`, `"GRANT 1"`),
		"grant_number":        mod(`"GRANT-1"`, `1`),
		"grant_missing":       mod(`"grant":"GRANT-1",`, ``),
		"expiry_not_rfc3339":  mod(`2026-12-02T19:05:00Z`, `2026-12-02 19:05:00`),
		"expiry_date":         mod(`2026-12-02T19:05:00Z`, `2026-12-02`),
		"expiry_lower_t":      mod(`2026-12-02T19:05:00Z`, `2026-12-02t19:05:00z`),
		"expired":             mod(`2026-12-02T19:05:00Z`, `2026-12-02T18:59:59Z`),
		"expires_now":         mod(`2026-12-02T19:05:00Z`, `2026-12-02T19:00:00Z`),
		"expiry_too_far":      mod(`2026-12-02T19:05:00Z`, `2026-12-02T19:07:01Z`),
		"duplicate_grant":     mod(`"grant":"GRANT-1"`, `"grant":"GRANT-1","grant":"GRANT-2"`),
		"trailing":            good + `{}`,
		"grant_invalid_utf8":  mod(`"GRANT-1"`, "\"G\xff\""),
		"upper_case_member":   mod(`"grant":`, `"Grant":`),
		"expiry_null":         mod(`"2026-12-02T19:05:00Z"`, `null`),
		"two_values_no_space": good + good,
	}
	for name, in := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := ParseEnvelope([]byte(in), "collie", now)
			if err == nil {
				t.Fatalf("accepted %s", in)
			}
			if strings.Contains(err.Error(), "GRANT") {
				t.Fatalf("the error shows the output: %v", err)
			}
		})
	}
	// The skew allowance: 300 s plus 120 s is the most accepted.
	if _, err := ParseEnvelope([]byte(envelopeFor("collie", "G", now.Add(GrantCeiling))), "collie", now); err != nil {
		t.Fatalf("a grant at the ceiling was refused: %v", err)
	}
}

// TestParseSession_R9: exactly the six keys, closed, not yet expired.
func TestParseSession_R9(t *testing.T) {
	now := time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC)
	base := map[string]any{"schema": "raft-cli-agent-session.v1", "token_type": "Bearer", "access_token": "ACC-1",
		"access_expires_at": "2026-12-02T19:15:00Z", "refresh_token": "REF-1", "refresh_expires_at": "2026-12-03T19:00:00+01:00"}
	enc := func(change func(m map[string]any)) []byte {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		change(m)
		b, _ := json.Marshal(m)
		return b
	}
	s, err := ParseSession(enc(func(map[string]any) {}), now)
	if err != nil || s.AccessToken != "ACC-1" || *s.RefreshExpiresAt != "2026-12-03T19:00:00+01:00" {
		t.Fatalf("ParseSession(good) = %+v, %v", s, err)
	}
	if s, err := ParseSession(enc(func(m map[string]any) { m["refresh_expires_at"] = nil }), now); err != nil || s.RefreshExpiresAt != nil {
		t.Fatalf("ParseSession(null refresh expiry) = %+v, %v", s, err)
	}
	bad := map[string]func(m map[string]any){
		"extra":                 func(m map[string]any) { m["scope"] = "all" },
		"schema":                func(m map[string]any) { m["schema"] = "raft-cli-agent-session.v2" },
		"token_type":            func(m map[string]any) { m["token_type"] = "bearer" },
		"access_empty":          func(m map[string]any) { m["access_token"] = "" },
		"access_number":         func(m map[string]any) { m["access_token"] = 5 },
		"refresh_space":         func(m map[string]any) { m["refresh_token"] = "REF 1" },
		"access_expiry_bad":     func(m map[string]any) { m["access_expires_at"] = "soon" },
		"access_expired":        func(m map[string]any) { m["access_expires_at"] = "2026-12-02T18:59:59Z" },
		"access_expires_now":    func(m map[string]any) { m["access_expires_at"] = "2026-12-02T19:00:00Z" },
		"refresh_expired":       func(m map[string]any) { m["refresh_expires_at"] = "2026-12-02T18:00:00Z" },
		"refresh_expiry_number": func(m map[string]any) { m["refresh_expires_at"] = 5 },
	}
	for _, k := range []string{"schema", "token_type", "access_token", "access_expires_at", "refresh_token", "refresh_expires_at"} {
		bad["missing_"+k] = func(m map[string]any) { delete(m, k) }
	}
	for name, change := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSession(enc(change), now)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), "ACC-1") || strings.Contains(err.Error(), "REF-1") {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
	for name, in := range map[string]string{"duplicate": `{"schema":"raft-cli-agent-session.v1","schema":"raft-cli-agent-session.v1"}`, "array": `[]`, "null": `null`, "text": `ok`} {
		if _, err := ParseSession([]byte(in), now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
