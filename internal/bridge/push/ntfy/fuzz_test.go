package ntfy

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzCheckServer: a server URL is taken only when it is https://, or
// http:// to this machine, with a host and no user, password, query or
// fragment; the error never quotes the URL (it may hold a token: the
// seeds carry tk_fuzz, which no error may repeat).
func FuzzCheckServer(f *testing.F) {
	for _, s := range []string{"https://ntfy.sh", "http://127.0.0.1:8090", "http://[::1]:80/x", "https://u:p@ntfy.sh", "http://ntfy.sh", "https://ntfy.sh/?a=b", "https://ntfy.sh#f", "javascript:alert(1)", "https://", "http://localhost.evil.com", "https://tk_fuzz:tk_fuzz@ntfy.sh/?auth=tk_fuzz#tk_fuzz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := CheckServer(s)
		if err != nil {
			if strings.Contains(err.Error(), "tk_fuzz") {
				t.Fatalf("the error quotes the URL: %v", err)
			}
			return
		}
		again, perr := url.Parse(s)
		if perr != nil || again.String() != u.String() {
			t.Fatalf("%q parsed as %v", s, u)
		}
		if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%q taken: %+v", s, u)
		}
		switch h := u.Hostname(); u.Scheme {
		case "https":
		case "http":
			if h != "127.0.0.1" && h != "::1" && h != "localhost" {
				t.Fatalf("plain http to %q taken", h)
			}
		default:
			t.Fatalf("scheme %q taken", u.Scheme)
		}
	})
}
