package device

import (
	"net/http/httptest"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/bearer/bearertest"
)

// TestCredentialAuthorizationTable: the device API reads a device's
// credential from Authorization with the one parser every surface uses
// (the shared table); a header that is no bearer credential falls back to
// the web app's cookie, never to the header's raw text.
func TestCredentialAuthorizationTable(t *testing.T) {
	const token = "device-credential"
	for _, c := range bearertest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/state", nil)
			c.Set(r.Header, token)
			if got := credential(r) == token; got != c.Accepted {
				t.Fatalf("accepted = %v, want %v", got, c.Accepted)
			}
		})
	}
}
