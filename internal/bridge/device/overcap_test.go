package device

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// readsNoBody are the device API's write routes that read no body, with
// why; every other one refuses a body over its cap with 413.
var readsNoBody = map[string]string{
	"DELETE /api/v1/push/subscription":    "turning notifications off takes no body",
	"POST /api/v1/agents/{agent}/{write}": "names no write: it only lists the writes there are",
}

// overCapCode is the code of a route whose 413 has its own, as documented
// in docs/device-api.md; every other says body-too-large.
var overCapCode = map[string]string{
	"POST /api/v1/push/subscription": "bad-subscription",
}

// TestEveryBodyOverCapIs413: every device API route that reads a body
// (pairing, a subscription, each write of the registry) refuses one over
// its cap with 413 body-too-large, whether its length is given or not,
// and forwards nothing; the writes and pairing used to answer 400
// bad-request, as if the body were malformed.
func TestEveryBodyOverCapIs413(t *testing.T) {
	f := newFixture(t)
	f.api.o.WebPushKey = testVAPIDKey
	body := `{"requestId":"r","conversation":"c","text":"` + strings.Repeat("a", wire.WriteCap) + `"}`
	seen := 0
	for _, r := range f.api.routes().routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		if method == "GET" || r.agent {
			continue
		}
		if _, ok := readsNoBody[r.pattern]; ok {
			continue
		}
		seen++
		path = strings.ReplaceAll(path, "{agent}", "demo")
		code := wire.CodeBodyTooLarge
		if c, ok := overCapCode[r.pattern]; ok {
			code = c
		}
		for _, known := range []bool{true, false} {
			var rd io.Reader = strings.NewReader(body)
			if !known {
				rd = io.MultiReader(rd) // no length: sent chunked
			}
			req, _ := http.NewRequest(method, f.srv.URL+path, rd)
			req.Header.Set("Authorization", "Bearer "+f.cred)
			req.Header.Set(WriteHeader, "1")
			n := f.back.count()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"code":"`+code+`"`) {
				t.Errorf("%s %s, %d bytes (length given %v): %d %s; want 413 %s", method, path, len(body), known, resp.StatusCode, b, code)
			}
			if f.back.count() != n {
				t.Errorf("%s %s: a body over its cap reached the agent", method, path)
			}
		}
	}
	if seen < 10 {
		t.Fatalf("only %d routes with a body found", seen)
	}
}
