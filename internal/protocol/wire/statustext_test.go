package wire

import (
	"net/http"
	"testing"
)

// TestStatusTextIsNetHTTPs: wire names the statuses it knows with
// net/http's own texts (it does not link net/http), and any other by its
// number alone.
func TestStatusTextIsNetHTTPs(t *testing.T) {
	for code, text := range statusTexts {
		if want := http.StatusText(code); text != want {
			t.Errorf("status %d is %q here, %q in net/http", code, text, want)
		}
	}
	for _, tc := range []struct {
		code int
		want string
	}{{404, "404 Not Found"}, {500, "500 Internal Server Error"}, {418, "HTTP status 418"}, {999, "HTTP status 999"}} {
		if got := StatusText(tc.code); got != tc.want {
			t.Errorf("StatusText(%d) = %q, want %q", tc.code, got, tc.want)
		}
	}
}
