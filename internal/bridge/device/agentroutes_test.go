package device

import (
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// TestAgentSurface_D6: the agent surface is served beside the
// device API from loginwire's one table, behind the same Host check; a
// web page can never call it (a request with Origin or Sec-Fetch-Site is
// refused before the service), no other method reaches it, and each
// address is rate-limited.
func TestAgentSurface_D6(t *testing.T) {
	var calls atomic.Int64
	agents := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusTeapot)
	})
	clock := &fakeClock{t: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	st, err := store.OpenStore(filepath.Join(t.TempDir(), "devices.json"), clock.now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	api := NewAPI(Options{Backend: &agentSide{view: demoView(1)}, Store: st, Pairings: store.NewPairings(clock.now),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.now, Site: siteOf(t, srv), Agents: agents})
	srv.Config.Handler = api.Handler()
	srv.Start()
	t.Cleanup(srv.Close)
	t.Cleanup(api.Close)
	do := func(method, path, host string, hdr map[string]string) int {
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
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, r := range loginwire.Routes() {
		before := calls.Load()
		if got := do(r.Method, r.Path, "", nil); got != http.StatusTeapot || calls.Load() != before+1 {
			t.Errorf("%s %s from a program: %d, want the service's answer", r.Method, r.Path, got)
		}
		for _, hdr := range []map[string]string{{"Origin": srv.URL}, {"Origin": "https://evil.invalid"}, {"Sec-Fetch-Site": "same-origin"}} {
			if got := do(r.Method, r.Path, "", hdr); got != http.StatusForbidden {
				t.Errorf("%s %s from a page (%v): %d, want 403", r.Method, r.Path, hdr, got)
			}
		}
		// Node's fetch (a platform's daemon may be written in it) sends
		// Sec-Fetch-Mode but neither Origin nor Sec-Fetch-Site: a program.
		before = calls.Load()
		if got := do(r.Method, r.Path, "", map[string]string{"Sec-Fetch-Mode": "cors", "User-Agent": "node"}); got != http.StatusTeapot || calls.Load() != before+1 {
			t.Errorf("%s %s from Node's fetch: %d, want the service's answer", r.Method, r.Path, got)
		}
		if got := do(r.Method, r.Path, "rebind.invalid", nil); got != http.StatusMisdirectedRequest {
			t.Errorf("%s %s for another host: %d, want 421", r.Method, r.Path, got)
		}
		if r.Method == "POST" {
			if got := do("PUT", r.Path, "", nil); got != http.StatusMethodNotAllowed {
				t.Errorf("PUT %s: %d, want 405", r.Path, got)
			}
		}
		if calls.Load() != before+1 {
			t.Fatalf("%s %s: a refused request reached the service", r.Method, r.Path)
		}
	}
	// The rate: a burst of 40, then 429 until time passes.
	limited := 0
	for range 60 {
		if do("GET", loginwire.ManifestPath, "", nil) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("60 requests at once from one address were all served")
	}
	clock.add(time.Minute)
	if got := do("GET", loginwire.ManifestPath, "", nil); got != http.StatusTeapot {
		t.Fatalf("after a minute: %d", got)
	}
}
