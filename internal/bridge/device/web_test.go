package device

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device/web"
)

// TestWebPage_X6_headers: the device API serves the web app at / with a
// strict Content-Security-Policy and the other security headers, on every
// file and on a 404; the page needs no credential and sets none; the API's
// own routes are not shadowed by the page.
func TestWebPage_X6_headers(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		path, contentType, contains string
		status                      int
	}{
		{"/", "text/html; charset=utf-8", `<script type="module" src="/app.js"></script>`, 200},
		{"/app.js", "text/javascript; charset=utf-8", "from './pairing.js'", 200},
		{"/pairing.js", "text/javascript; charset=utf-8", "verificationCode", 200},
		{"/app.css", "text/css; charset=utf-8", ":root", 200},
		{"/icon.svg", "image/svg+xml", "<svg", 200},
		{"/sw.js", "text/javascript; charset=utf-8", "notificationclick", 200},
		{"/no-such-file", "text/plain; charset=utf-8", "not found", 404},
		{"/api/v1/nothing-here", "text/plain; charset=utf-8", "not found", 404},
	} {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			resp, err := http.Get(f.srv.URL + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != tt.contentType || !strings.Contains(string(body), tt.contains) {
				t.Fatalf("GET %s: %d %q, want %d %q with %q", tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), tt.status, tt.contentType, tt.contains)
			}
			h := resp.Header
			csp := h.Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'none'", "script-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
				if !strings.Contains(csp, d+";") && !strings.HasSuffix(csp, d) {
					t.Errorf("the CSP lacks %q: %s", d, csp)
				}
			}
			for _, bad := range []string{"unsafe-inline", "unsafe-eval", "unsafe-hashes", "data:", "blob:", "*", "http:", "https:"} {
				if strings.Contains(csp, bad) {
					t.Errorf("the CSP allows %q: %s", bad, csp)
				}
			}
			want := map[string]string{
				"X-Content-Type-Options":     "nosniff",
				"Referrer-Policy":            "no-referrer",
				"X-Frame-Options":            "DENY",
				"Cross-Origin-Opener-Policy": "same-origin",
			}
			for k, v := range want {
				if h.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, h.Get(k), v)
				}
			}
			if h.Get("Set-Cookie") != "" {
				t.Errorf("the page sets a cookie: %q", h.Get("Set-Cookie"))
			}
			if tt.status == 200 {
				// Revalidated on every load, so a new binary's page is used at once.
				req, _ := http.NewRequest("GET", f.srv.URL+tt.path, nil)
				req.Header.Set("If-None-Match", h.Get("ETag"))
				r2, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				r2.Body.Close()
				if h.Get("Cache-Control") != "no-cache" || h.Get("ETag") == "" || r2.StatusCode != http.StatusNotModified {
					t.Errorf("caching: Cache-Control %q, ETag %q, revalidation %d", h.Get("Cache-Control"), h.Get("ETag"), r2.StatusCode)
				}
			}
		})
	}
	// The API behind the page still answers for itself.
	if status, body := f.do(t, "GET", "/api/v1/state", "", "", nil); status != 401 || !strings.Contains(body, "not-paired") {
		t.Fatalf("GET /api/v1/state without a credential: %d %s", status, body)
	}
	if status, body := f.do(t, "GET", "/api/v1/whoami", f.cred, "", nil); status != 200 || !strings.Contains(body, `"name":"phone"`) {
		t.Fatalf("GET /api/v1/whoami: %d %s", status, body)
	}
	if status, _ := f.do(t, "POST", "/", "", "", nil); status != http.StatusMethodNotAllowed {
		t.Fatalf("POST / = %d, want 405", status)
	}
}

// TestWebStatic_X1_X6_noHTMLSinks scans the embedded page: agent text is
// drawn as text (X1, X6), so the script has no way to parse HTML or run
// strings as code, the HTML has no inline script, handler or style (the
// CSP would refuse them anyway), and nothing is loaded from elsewhere.
func TestWebStatic_X1_X6_noHTMLSinks(t *testing.T) {
	banned := []string{
		"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "createContextualFragment",
		"DOMParser", "srcdoc", "eval(", "new Function", "Function(", "javascript:", "setTimeout('", `setTimeout("`,
		"setInterval('", `setInterval("`, "import(", "importScripts", ".cssText", "setHTMLUnsafe", "parseHTMLUnsafe",
	}
	inlineHandler := regexp.MustCompile(`(?i)<[^>]*\son[a-z]+\s*=`)
	styleAttr := regexp.MustCompile(`(?i)<[^>]*\sstyle\s*=`)
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)
	scriptTag := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	cssExternal := regexp.MustCompile(`(?i)@import|url\(\s*["']?\s*(https?:)?//`)
	seen := map[string]bool{}
	err := fs.WalkDir(webFiles, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(webFiles, path)
		if err != nil {
			return err
		}
		src := string(data)
		seen[path] = true
		switch {
		case strings.HasSuffix(path, ".js"):
			for _, b := range banned {
				if strings.Contains(src, b) {
					t.Errorf("X1: %s uses %q", path, b)
				}
			}
			// One Trusted Types policy, the service worker's (web.SWPolicy):
			// TestTrustedTypesOnePolicy reads it.
			if n := strings.Count(src, "createPolicy("); n > 0 && (path != "notify.js" || n != 1) {
				t.Errorf("X1: %s makes %d Trusted Types policies; only notify.js's %s may exist", path, n, web.SWPolicy)
			}
			if strings.Contains(src, "setAttribute('on") || strings.Contains(src, `setAttribute("on`) || strings.Contains(src, "setAttribute('style") {
				t.Errorf("X1: %s sets an event-handler or style attribute from a string", path)
			}
		case strings.HasSuffix(path, ".html"):
			for _, b := range banned {
				if strings.Contains(src, b) {
					t.Errorf("X1: %s holds %q", path, b)
				}
			}
			for _, m := range scriptTag.FindAllStringSubmatch(src, -1) {
				if !strings.Contains(m[1], `src="/`) || strings.TrimSpace(m[2]) != "" {
					t.Errorf("%s has an inline script: %s", path, m[0])
				}
			}
			if m := inlineHandler.FindString(src); m != "" {
				t.Errorf("%s has an inline event handler: %s", path, m)
			}
			if m := styleAttr.FindString(src); m != "" {
				t.Errorf("%s has a style attribute: %s", path, m)
			}
			if m := external.FindString(src); m != "" {
				t.Errorf("%s loads something from elsewhere: %s", path, m)
			}
		case strings.HasSuffix(path, ".css"):
			if m := cssExternal.FindString(src); m != "" {
				t.Errorf("%s loads something from elsewhere: %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"index.html", "app.js", "app.css"} {
		if !seen[want] {
			t.Fatalf("%s is not embedded (embedded: %v)", want, seen)
		}
	}
}

// webFiles are the page's files as they lie in the source tree: the
// static checks read them there (web embeds and serves each by name).
var webFiles = os.DirFS("web")
