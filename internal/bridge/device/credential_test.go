package device

import (
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"net/http"
	"strings"
	"testing"
)

// TestUnpairedToldApart: a request with no credential (a browser whose
// sign-in was cleared), one the bridge does not know, and a revoked
// device's are refused with 401 each, but say which: only the revoked
// one says "revoked", on every read, the event stream and the writes.
func TestUnpairedToldApart(t *testing.T) {
	f := newFixture(t)
	laptop, laptopID := f.pair(t, "laptop")
	if err := f.api.Revoke(laptopID); err != nil {
		t.Fatal(err)
	}
	creds := []struct{ name, cred, code, says string }{
		{"cookie_gone", "", CodeNotPaired, "this browser sent no sign-in: it was never paired with this bridge, or its sign-in was cleared"},
		{"unknown", "forged-" + strings.Repeat("A", 40), CodeNotPaired, "matches no device this bridge knows"},
		{"revoked", laptop, CodeRevoked, "this device was revoked"},
	}
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/whoami", ""},
		{http.MethodGet, "/api/v1/state", ""},
		{http.MethodGet, "/api/v1/events", ""},
		{http.MethodGet, "/api/v1/agents/demo", ""},
		{http.MethodGet, "/api/v1/receipts", ""},
		{http.MethodPost, "/api/v1/agents/demo/send", `{"requestId":"r1","conversation":"c","text":"hi"}`},
	}
	for _, c := range creds {
		for _, rt := range routes {
			t.Run(c.name+rt.path, func(t *testing.T) {
				status, body := f.do(t, rt.method, rt.path, c.cred, rt.body, writeHdr)
				var eb apierr.ErrorBody
				json.Unmarshal([]byte(body), &eb)
				if status != http.StatusUnauthorized || eb.Error.Code != c.code || !strings.Contains(eb.Error.Message, c.says) {
					t.Fatalf("%s %s: %d %s; want 401 %s saying %q", rt.method, rt.path, status, body, c.code, c.says)
				}
				if c.code != CodeRevoked && strings.Contains(eb.Error.Message, "revoked (") {
					t.Fatalf("a device that was not revoked is told it was: %s", body)
				}
			})
		}
	}
}
