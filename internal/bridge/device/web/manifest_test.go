package web

import (
	"bytes"
	"encoding/json"
	"image/png"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestManifest_Installable: the manifest served is what chromium asks of
// an installable app (a name, a start URL in scope, standalone, a 192 and
// a 512 PNG icon of those sizes, a maskable one), every icon it names is
// served, and the page links it.
func TestManifest_Installable(t *testing.T) {
	h := Handler()
	get := func(path string) ([]byte, string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			t.Fatalf("GET %s: %d", path, w.Code)
		}
		return w.Body.Bytes(), w.Header().Get("Content-Type")
	}
	body, ctype := get("/manifest.webmanifest")
	if ctype != "application/manifest+json" {
		t.Fatalf("the manifest's type is %q", ctype)
	}
	var m struct {
		ID, Name, Scope, Display string
		ShortName                string `json:"short_name"`
		StartURL                 string `json:"start_url"`
		Icons                    []struct{ Src, Sizes, Type, Purpose string }
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Name != "Collie" || m.ShortName != "Collie" || m.StartURL != "/" || m.Scope != "/" || m.ID != "/" || m.Display != "standalone" {
		t.Fatalf("manifest: %+v", m)
	}
	seen := map[string]bool{}
	for _, ic := range m.Icons {
		b, ctype := get(ic.Src)
		if ctype != ic.Type {
			t.Errorf("%s is served as %q, the manifest says %q", ic.Src, ctype, ic.Type)
		}
		if ic.Type != "image/png" {
			continue
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", ic.Src, err)
		}
		if size := strconv.Itoa(img.Bounds().Dx()) + "x" + strconv.Itoa(img.Bounds().Dy()); size != ic.Sizes {
			t.Errorf("%s is %s, the manifest says %s", ic.Src, size, ic.Sizes)
		}
		seen[ic.Sizes+" "+ic.Purpose] = true
	}
	for _, want := range []string{"192x192 ", "512x512 ", "512x512 maskable"} {
		if !seen[want] {
			t.Errorf("the manifest has no %q PNG icon", want)
		}
	}
	page, _ := get("/")
	for _, want := range []string{`<link rel="manifest" href="/manifest.webmanifest">`, `<link rel="apple-touch-icon" href="/apple-touch-icon.png">`, `<meta name="theme-color"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("index.html lacks %s", want)
		}
	}
}

// TestShellWorker_NoAgentData: the app shell the worker keeps is the
// page's own files and nothing under /api/ (agents' data, the device's
// cookie); each is served; and it comes first in /sw.js, before the push
// part.
func TestShellWorker_NoAgentData(t *testing.T) {
	shell := shellList(t)
	for _, p := range shell {
		if strings.HasPrefix(p, "/api") || strings.Contains(p, "healthz") || strings.Contains(p, "sw.js") {
			t.Errorf("the shell keeps %s", p)
		}
		if _, ok := routes()[p]; !ok {
			t.Errorf("the shell keeps %s, which is not served", p)
		}
	}
	sw := string(routes()["/sw.js"].body)
	if i, j := strings.Index(sw, "app shell part"), strings.Index(sw, "'push'"); i < 0 || j < 0 || i > j {
		t.Errorf("/sw.js does not hold the shell part before the push handler")
	}
}
