package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenStoreStrict: devices.json is read exact-case,
// with no name twice and no field Collie does not know; before, "ID" and
// "CredHash" filled the fields and the last of two "credHash" won.
func TestOpenStoreStrict(t *testing.T) {
	good := `{"version":1,"devices":[{"id":"d1","name":"Phone","pairedAt":"2025-01-02T03:04:05.123456789Z","credHash":"ab"}],"revoked":[{"id":"d0","credHash":"cd","revokedAt":"2025-01-01T00:00:00Z"}]}`
	for _, tc := range []struct{ name, data, want string }{
		{"good", good, ""},
		{"wrong_case", strings.Replace(good, `"credHash":"ab"`, `"CredHash":"ab"`, 1), `unknown field "CredHash"`},
		{"wrong_case_top", strings.Replace(good, `"devices"`, `"Devices"`, 1), `unknown field "Devices"`},
		{"twice", strings.Replace(good, `"credHash":"ab"`, `"credHash":"ab","credHash":"ef"`, 1), `field "credHash" appears twice`},
		{"unknown", strings.Replace(good, `"version":1`, `"version":1,"admin":true`, 1), `unknown field "admin"`},
		{"trailing", good + "{}", "data after"},
		{"invalid_utf8", strings.Replace(good, "Phone", "Ph\xffone", 1), "not valid UTF-8"},
		{"version", strings.Replace(good, `"version":1`, `"version":2`, 1), "version is not 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "devices.json")
			if err := os.WriteFile(path, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := OpenStore(path, time.Now)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if d := s.devices["d1"]; d == nil || d.CredHash != "ab" || d.PairedAt.Nanosecond() != 123456789 {
					t.Fatalf("devices = %+v", s.devices)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pair your devices again") {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
