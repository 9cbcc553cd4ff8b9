package loginapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/bearer/bearertest"
)

// TestAccessTokenAuthorizationTable: the agent API reads the access token
// with the one parser every surface uses (the shared table): a bare token
// without "Bearer " is no credential here, as on the device API.
func TestAccessTokenAuthorizationTable(t *testing.T) {
	r := newRig(t)
	_, sess := r.login(verifier)
	access := sess["access_token"].(string)
	for _, c := range bearertest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			req := httptest.NewRequest("GET", loginwire.WhoamiPath, nil)
			c.Set(req.Header, access)
			w := httptest.NewRecorder()
			r.api.ServeHTTP(w, req)
			if got := w.Code == http.StatusOK; got != c.Accepted {
				t.Fatalf("accepted = %v (HTTP %d %s), want %v", got, w.Code, w.Body, c.Accepted)
			}
		})
	}
}
