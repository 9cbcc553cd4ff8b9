package device

import "strings"

// uaScan is how much of a User-Agent header NameFromUserAgent reads: the
// tokens it looks for come early, and a longer header is no one's browser.
const uaScan = 1024

// uaBrowsers and uaPlatforms map a User-Agent token to the name shown,
// most specific first: Edge and Opera also say Chrome, Chrome also says
// Safari, and an iPhone also says "like Mac OS X".
var (
	uaBrowsers = []struct{ token, name string }{
		{"EdgA/", "Edge"}, {"EdgiOS/", "Edge"}, {"Edg/", "Edge"}, {"Edge/", "Edge"},
		{"OPR/", "Opera"}, {"OPT/", "Opera"}, {"OPiOS/", "Opera"},
		{"SamsungBrowser/", "Samsung Internet"},
		{"FxiOS/", "Firefox"}, {"Firefox/", "Firefox"},
		{"CriOS/", "Chrome"}, {"HeadlessChrome/", "Chrome"}, {"Chromium/", "Chromium"}, {"Chrome/", "Chrome"},
		{"Safari/", "Safari"},
	}
	uaPlatforms = []struct{ token, name string }{
		{"iPhone", "iPhone"}, {"iPad", "iPad"}, {"iPod", "iPod"},
		{"Android", "Android"}, {"CrOS", "ChromeOS"},
		{"Windows", "Windows"}, {"Macintosh", "Mac"}, {"Mac OS X", "Mac"},
		{"FreeBSD", "FreeBSD"}, {"OpenBSD", "OpenBSD"}, {"Linux", "Linux"},
	}
)

// NameFromUserAgent is a device's name when the user gave none at
// pairing: its browser and platform from the User-Agent header, such as
// "Chrome on Android", "Safari on iPhone" or "Firefox on Linux". The
// result is made only of the names in the tables above, never of the
// header's own text, so it is clean and short whatever a client sends;
// a browser or platform it does not know is left out, and with neither
// the name is "Browser".
func NameFromUserAgent(ua string) string {
	if len(ua) > uaScan {
		ua = ua[:uaScan]
	}
	find := func(list []struct{ token, name string }) string {
		for _, e := range list {
			if strings.Contains(ua, e.token) {
				return e.name
			}
		}
		return ""
	}
	browser, platform := find(uaBrowsers), find(uaPlatforms)
	switch {
	case browser != "" && platform != "":
		return browser + " on " + platform
	case platform != "":
		return "Browser on " + platform
	case browser != "":
		return browser
	}
	return "Browser"
}
