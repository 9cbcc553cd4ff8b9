package device

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestRateLimitSaysWhen: every 429 of the device API says what is true:
// the limit (a burst, then a steady rate) and when the next request goes
// through, also as Retry-After; and a request made that much later does
// go through. (The per-source 429 used to say "wait a minute" while its
// budget refills at 10 a second.)
func TestRateLimitSaysWhen(t *testing.T) {
	cases := []struct {
		name  string
		burst int
		limit string // the limit in words
		retry int    // Retry-After, seconds
		do    func(f *fixture, remote string) (int, string, http.Header)
	}{
		{"source", 40, "at most 40 at once, then 10 a second", 1, func(f *fixture, remote string) (int, string, http.Header) {
			return serveH(f, remote, "POST", "/api/v1/agents/demo/send", "no-such-credential", `{}`)
		}},
		{"device", 20, "at most 20 at once, then 5 a second", 1, func(f *fixture, remote string) (int, string, http.Header) {
			return serveH(f, remote, "POST", "/api/v1/agents/demo/close", f.cred, `{"requestId":"r","conversation":"nope"}`)
		}},
		{"pairing", 5, "at most 5 at once, then one every 5 seconds", 5, func(f *fixture, remote string) (int, string, http.Header) {
			return serveH(f, remote, "POST", "/api/v1/pair", "", `{"secret":"guess","name":"x"}`)
		}},
		{"agent_surface", 40, "at most 40 at once, then 5 a second", 1, func(f *fixture, remote string) (int, string, http.Header) {
			return serveH(f, remote, "POST", loginwire.AskPath, "", `{}`)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.api.o.Agents = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
			remote := "192.0.2.9:4000"
			for i := 0; i < c.burst; i++ {
				if status, b, _ := c.do(f, remote); status == http.StatusTooManyRequests {
					t.Fatalf("request %d of the burst of %d: %d %s", i+1, c.burst, status, b)
				}
			}
			status, b, h := c.do(f, remote)
			var eb wire.ErrorBody
			json.Unmarshal([]byte(b), &eb)
			if status != http.StatusTooManyRequests || eb.Error.Code != "rate-limited" {
				t.Fatalf("past the burst: %d %s", status, b)
			}
			want := "try again in 1 second"
			if c.retry > 1 {
				want = "try again in " + strconv.Itoa(c.retry) + " seconds"
			}
			if !strings.Contains(eb.Error.Message, c.limit) || !strings.HasSuffix(eb.Error.Message, want) || strings.Contains(eb.Error.Message, "minute") {
				t.Errorf("429 says %q; want the limit %q and %q", eb.Error.Message, c.limit, want)
			}
			if h.Get("Retry-After") != strconv.Itoa(c.retry) {
				t.Errorf("Retry-After %q, want %d", h.Get("Retry-After"), c.retry)
			}
			// What it says is true: that much later, one goes through.
			f.clock.add(time.Duration(c.retry) * time.Second)
			if status, b, _ := c.do(f, remote); status == http.StatusTooManyRequests {
				t.Fatalf("%d s later, as the 429 said: %d %s", c.retry, status, b)
			}
		})
	}
}

func serveH(f *fixture, remote, method, path, cred, body string) (int, string, http.Header) {
	req := httptest.NewRequest(method, "http://"+f.srv.Listener.Addr().String()+path, strings.NewReader(body))
	req.RemoteAddr = remote
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	req.Header.Set(WriteHeader, "1")
	w := httptest.NewRecorder()
	f.api.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String(), w.Header()
}
