package device

import (
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/login/loginwire/loginwiretest"
)

// TestAgentSurfaceRefusalsAsDocumented: what the listener refuses on the
// agent surface (another host, a web page, another method, a flood) is in
// the one refusal shape docs/agent-login.md states, with a code it lists
// for that status.
func TestAgentSurfaceRefusalsAsDocumented(t *testing.T) {
	doc := loginwiretest.DocRefusals(t)
	clock := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), clock.now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: &agentSide{view: demoView(1)}, Store: st, Pairings: store.NewPairings(clock.now),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.now, Site: siteOf(t, srv),
		Agents: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(api.Close)
	do := func(method, path, host string, hdr map[string]string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(`{}`))
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, tc := range []struct {
		name, method, path, host string
		hdr                      map[string]string
		code                     string
	}{
		{"another host", "POST", loginwire.ExchangePath, "rebind.invalid", nil, "wrong-host"},
		{"a web page", "POST", loginwire.AskPath, "", map[string]string{"Origin": "https://evil.invalid"}, "cross-site"},
		{"a page's fetch", "GET", loginwire.ManifestPath, "", map[string]string{"Sec-Fetch-Site": "same-origin"}, "cross-site"},
		{"another method", "PUT", loginwire.RefreshPath, "", nil, loginwire.CodeMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := do(tc.method, tc.path, tc.host, tc.hdr)
			if code := loginwiretest.CheckRefusal(t, doc, status, h, body); code != tc.code {
				t.Fatalf("%d %s, want %s", status, body, tc.code)
			}
		})
	}
	for range 100 {
		status, h, body := do("GET", loginwire.ManifestPath, "", nil)
		if status == http.StatusNoContent {
			continue
		}
		if code := loginwiretest.CheckRefusal(t, doc, status, h, body); code != "rate-limited" {
			t.Fatalf("%d %s, want rate-limited", status, body)
		}
		return
	}
	t.Fatal("100 requests at once from one address were all served")
}
