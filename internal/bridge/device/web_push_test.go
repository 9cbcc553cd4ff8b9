package device

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device/web"
)

// TestNotificationsStatic_D6 reads the page's notification code: the
// browser's permission prompt is asked for in one place only, the tap
// handler of "Turn on notifications", never when the page loads; and the
// service worker's push part only shows and opens: it has no notification
// actions, reaches no API route and opens only this app's origin (D6).
func TestNotificationsStatic_D6(t *testing.T) {
	read := func(name string) string {
		b, err := fs.ReadFile(webFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	app := pageScripts(t)
	if n := strings.Count(app, "requestPermission("); n != 1 {
		t.Fatalf("the page's scripts ask for notification permission in %d places, want 1", n)
	}
	on := regexp.MustCompile(`(?s)async function notifyOn\(\) \{.*?\n\}\n`).FindString(app)
	if !strings.Contains(on, "Notification.requestPermission()") {
		t.Fatal("the permission request is not in notifyOn, the tap handler")
	}
	// notifyOn runs only from a button's click handler.
	for _, m := range regexp.MustCompile(`notifyOn\(\)`).FindAllStringIndex(app, -1) {
		line := app[strings.LastIndex(app[:m[0]], "\n")+1 : m[1]]
		if !strings.Contains(line, "const on = () => notifyOn()") && !strings.Contains(line, "async function notifyOn()") {
			t.Errorf("notifyOn is called outside a tap handler: %q", line)
		}
	}
	sw := read("sw-push.js")
	for _, bad := range []string{"actions", "fetch(", "/api/", "XMLHttpRequest", "postMessage", "sendBeacon"} {
		if strings.Contains(sw, bad) {
			t.Errorf("D6: sw-push.js uses %q: a notification only opens the app", bad)
		}
	}
	if !strings.Contains(sw, "u.origin === self.location.origin") {
		t.Error("sw-push.js opens an address without checking it is this app's origin")
	}
}

// TestTrustedTypesOnePolicy_X1: the page's one Trusted Types policy, the
// only one its CSP allows, makes a script URL and nothing else (no HTML,
// no script), and only for the constant /sw.js.
func TestTrustedTypesOnePolicy_X1(t *testing.T) {
	app := pageScripts(t)
	if n := strings.Count(app, "createPolicy("); n != 1 {
		t.Fatalf("the page's scripts make %d Trusted Types policies, want 1", n)
	}
	m := regexp.MustCompile(`(?s)createPolicy\('([^']*)', \{(.*?)\n    \}\);`).FindStringSubmatch(app)
	if m == nil || m[1] != web.SWPolicy {
		t.Fatalf("the page's policy is not %s: %q", web.SWPolicy, m)
	}
	body := m[2]
	if strings.Contains(body, "createHTML") || strings.Contains(body, "createScript:") || strings.Count(body, "createScriptURL") != 1 ||
		!strings.Contains(body, "if (u !== '/sw.js') throw") {
		t.Fatalf("the policy does more than make /sw.js:%s", body)
	}
	if !strings.Contains(web.CSP, "trusted-types "+web.SWPolicy) || strings.Contains(web.CSP, "allow-duplicates") || strings.Contains(web.CSP, "'default'") {
		t.Fatalf("the CSP's trusted-types: %s", web.CSP)
	}
}

// pageScripts is every script module of the page (all embedded *.js but
// the service worker's parts, sw-*.js), one after the other.
func pageScripts(t *testing.T) string {
	t.Helper()
	names, err := fs.Glob(webFiles, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, name := range names {
		if strings.HasPrefix(name, "sw-") {
			continue
		}
		b, err := fs.ReadFile(webFiles, name)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
		all.WriteString("\n")
	}
	if !strings.Contains(all.String(), "verificationCode") {
		t.Fatal("the page's scripts are not embedded")
	}
	return all.String()
}

// TestServiceWorkerWhole: /sw.js, the one worker script, holds every
// embedded worker file (sw*.js) once: the push part (sw-push.js) and the
// app shell's, however that is added, neither dropped nor doubled.
func TestServiceWorkerWhole(t *testing.T) {
	f := newFixture(t)
	status, served := f.do(t, "GET", "/sw.js", "", "", nil)
	if status != 200 {
		t.Fatalf("GET /sw.js: %d", status)
	}
	parts, _ := fs.Glob(webFiles, "sw*.js")
	if len(parts) == 0 {
		t.Fatal("no worker file is embedded")
	}
	for _, name := range parts {
		b, _ := fs.ReadFile(webFiles, name)
		if n := strings.Count(served, strings.TrimSpace(string(b))); n != 1 {
			t.Errorf("/sw.js holds %s %d times, want once", name, n)
		}
	}
}
