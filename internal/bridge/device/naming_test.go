package device

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNameFromUserAgent: a device the user does not name is named after
// its browser and platform, from a fixed vocabulary whatever the header
// holds.
func TestNameFromUserAgent(t *testing.T) {
	for _, tt := range []struct{ name, ua, want string }{
		{"chrome_android", "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", "Chrome on Android"},
		{"safari_iphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari on iPhone"},
		{"chrome_iphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", "Chrome on iPhone"},
		{"firefox_iphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/132.0 Mobile/15E148 Safari/605.1.15", "Firefox on iPhone"},
		{"safari_ipad", "Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari on iPad"},
		{"firefox_linux", "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Linux"},
		{"firefox_android", "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0", "Firefox on Android"},
		{"headless_chrome_linux", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", "Chrome on Linux"},
		{"chromium_linux", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chromium/131.0.0.0 Chrome/131.0.0.0 Safari/537.36", "Chromium on Linux"},
		{"edge_windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Edge on Windows"},
		{"safari_mac", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "Safari on Mac"},
		{"opera_android", "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36 OPR/86.0.0.0", "Opera on Android"},
		{"samsung_android", "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36", "Samsung Internet on Android"},
		{"chrome_chromeos", "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome on ChromeOS"},
		{"platform_only", "SomeApp/1.0 (Linux)", "Browser on Linux"},
		{"browser_only", "Firefox/133.0", "Firefox"},
		{"empty", "", "Browser"},
		{"curl", "curl/8.5.0", "Browser"},
		{"hostile_text_is_not_copied", "Android\x00\u202e<script>alert(1)</script>" + strings.Repeat("A", 10000), "Browser on Android"},
		{"token_past_the_scan_is_ignored", strings.Repeat("x", uaScan) + "Firefox/1 (Linux)", "Browser"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NameFromUserAgent(tt.ua); got != tt.want {
				t.Errorf("NameFromUserAgent(%.80q) = %q, want %q", tt.ua, got, tt.want)
			}
		})
	}
}

// TestPairNamesDeviceAfterBrowser: a pairing without a name (or with one
// that is only blanks or control characters) names the device after the
// browser that paired; a name given is kept.
func TestPairNamesDeviceAfterBrowser(t *testing.T) {
	f := newFixture(t)
	const android = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"
	for _, tt := range []struct{ name, body, want string }{
		{"no_name", `"name":""`, "Chrome on Android"},
		{"name_left_out", ``, "Chrome on Android"},
		{"blank_name", `"name":"  \u0007 "`, "Chrome on Android"},
		{"name_given", `"name":"Sam's phone"`, "Sam's phone"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.pairs.New()
			if err != nil {
				t.Fatal(err)
			}
			body := `{"secret":"` + p.Secret + `"`
			if tt.body != "" {
				body += "," + tt.body
			}
			hdr := map[string]string{WriteHeader: "1", "User-Agent": android}
			status, out := f.do(t, http.MethodPost, "/api/v1/pair", "", body+"}", hdr)
			if status != 200 {
				t.Fatalf("pair: %d %s", status, out)
			}
			var r PairReply
			json.Unmarshal([]byte(out), &r)
			status, out = f.do(t, http.MethodGet, "/api/v1/whoami", r.Credential, "", nil)
			var me DeviceView
			if json.Unmarshal([]byte(out), &me); status != 200 || me.Name != tt.want {
				t.Fatalf("whoami = %d %s; want the name %q", status, out, tt.want)
			}
		})
	}
}
