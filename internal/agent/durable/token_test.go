package durable

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/bearer/bearertest"
)

// TestRequireTokenAuthorizationTable_K7: the token transport reads the
// Authorization header with the one parser every surface uses, so the
// shared table's headers are accepted and refused here as on the agent
// and device APIs.
func TestRequireTokenAuthorizationTable_K7(t *testing.T) {
	token := strings.Repeat("t", 32)
	h := RequireToken(Tokens{Current: token}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	for _, c := range bearertest.Cases(t) {
		t.Run(c.Name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/v1/snapshot", nil)
			c.Set(r.Header, token)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := w.Code == http.StatusNoContent; got != c.Accepted {
				t.Fatalf("accepted = %v (HTTP %d), want %v", got, w.Code, c.Accepted)
			}
		})
	}
}
