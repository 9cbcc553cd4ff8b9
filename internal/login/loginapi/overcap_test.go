package loginapi

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestEveryBodyOverCapIs413: every route of the agent surface that takes a
// body (loginwire.Routes) refuses one over its cap with 413, whether its
// length is given or not: the token endpoints and the agent-login action
// with invalid (their cap is 16 KiB), the ask, on the agent's board, with
// body-too-large.
func TestEveryBodyOverCapIs413(t *testing.T) {
	r := newRig(t)
	host := loginhost.New(loginhost.Options{Attach: func(string, upstream.Waiter) error { return nil }})
	defer host.Close()
	r.api.o.Boards = host
	_, sess := r.login(verifier)
	ch := loginwire.Challenge(verifier)
	auth := map[string]func() map[string]string{
		loginwire.AuthNone:       func() map[string]string { return nil },
		loginwire.AuthCredential: func() map[string]string { return nil },
		loginwire.AuthPlatform: func() map[string]string {
			return map[string]string{AssertionHeader: r.plat.sign("", r.plat.claims(r.now, ch))}
		},
		loginwire.AuthAccess: func() map[string]string {
			return map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)}
		},
	}
	seen := 0
	for _, route := range loginwire.Routes() {
		if route.Method != "POST" {
			continue
		}
		seen++
		limit, code := maxBody, loginwire.CodeInvalid
		if route.Path == loginwire.AskPath {
			limit, code = wire.AskCap, wire.CodeBodyTooLarge
		}
		body := `{"schema":"` + strings.Repeat("a", limit) + `"}`
		for _, known := range []bool{true, false} {
			var rd io.Reader = strings.NewReader(body)
			if !known {
				rd = io.MultiReader(rd)
			}
			req := httptest.NewRequest("POST", route.Path, rd)
			if !known {
				req.ContentLength = -1
			}
			for k, v := range auth[route.Auth]() {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			r.api.ServeHTTP(w, req)
			if w.Code != 413 || !strings.Contains(w.Body.String(), `"`+code+`"`) {
				t.Errorf("POST %s, %d bytes (length given %v): %d %s; want 413 %s", route.Path, len(body), known, w.Code, w.Body.String(), code)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("only %d routes with a body", seen)
	}
}
