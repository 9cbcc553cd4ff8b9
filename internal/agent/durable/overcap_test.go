package durable

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestEveryBodyOverCapIs413: every route that reads a body (the writes of
// the registry, ask, revoke, the local routes) refuses one over its cap
// with 413 body-too-large, whether the body's length is given or not; the
// revoke used to answer 400 bad-request, as if the body were malformed.
func TestEveryBodyOverCapIs413(t *testing.T) {
	s, err := NewServer(wire.Hello{Agent: "a"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	s.SetApp(&calls{})
	srv := httptest.NewServer(s.handler(Transport{Unchecked: true}))
	defer srv.Close()
	paths := []string{wire.AskPath, wire.RevokePath}
	for _, w := range wire.Writes() {
		paths = append(paths, w.Path)
	}
	for path := range s.localRoutes() {
		paths = append(paths, path)
	}
	for _, path := range paths {
		limit := wire.WriteCap
		if path == wire.AskPath {
			limit = wire.AskCap
		}
		body := `{"requestId":"r","grant":"` + strings.Repeat("a", limit) + `"}`
		for _, known := range []bool{true, false} {
			var r io.Reader = strings.NewReader(body)
			if !known {
				r = io.MultiReader(r) // no length: sent chunked
			}
			req, _ := http.NewRequest("POST", srv.URL+path, r)
			req.Header.Set(wire.VersionHeader, "1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), wire.CodeBodyTooLarge) {
				t.Errorf("POST %s, %d bytes (length given %v): %d %s; want 413 %s", path, len(body), known, resp.StatusCode, b, wire.CodeBodyTooLarge)
			}
		}
	}
}
