package device

import (
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/audit"
)

// notAudited are the write routes whose requests are not writes of a
// paired device, with why; every other write route is in the audit log.
var notAudited = map[string]string{
	"POST /api/v1/pair":                   "no device exists yet: pairings, done or refused, go to the journal with the source address (docs/device-api.md)",
	"POST /api/v1/agents/{agent}/{write}": "names no write: it only lists the writes there are",
}

// TestEveryDeviceWriteIsAudited_A1 walks the device API's routes: every
// route that takes a state-changing method (the agent surface's aside:
// an agent's, not a device's) is a write the audit log has an event for,
// and one request to it, done or refused by the gate, leaves an audit
// line naming that write. A write route added without its audit event
// fails here (A1: every write from a device, done or refused).
func TestEveryDeviceWriteIsAudited_A1(t *testing.T) {
	f := newFixture(t)
	f.api.o.WebPushKey = testVAPIDKey
	seen := 0
	for _, r := range f.api.routes().routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		if method == "GET" || r.agent {
			continue
		}
		if why, ok := notAudited[r.pattern]; ok {
			t.Logf("%s is not audited: %s", r.pattern, why)
			continue
		}
		seen++
		if !audit.Audited(r.write) {
			t.Errorf("A1: %s is a device write (%q) the audit log has no event for", r.pattern, r.write)
			continue
		}
		path = strings.ReplaceAll(path, "{agent}", "demo")
		body := `{"requestId":"r-` + r.write + `","conversation":"c","text":"hi"}`
		if r.write == audit.EventPushSubscribe {
			body = subBody("https://push.example/sub/" + f.devID)
		}
		for _, c := range []struct {
			name string
			hdr  map[string]string
		}{{"done", writeHdr}, {"refused", nil}} {
			before := f.audit.count()
			status, b := f.do(t, method, path, f.cred, body, c.hdr)
			lines := f.audit.all()[before:]
			found := false
			for _, l := range lines {
				found = found || strings.Contains(l, " "+r.write+" ")
			}
			if !found {
				t.Errorf("A1: %s %s (%s: %d %s) left no audit line naming %s: %q", method, path, c.name, status, b, r.write, lines)
			}
		}
	}
	if seen < 3 {
		t.Fatalf("only %d audited write routes found", seen)
	}
}

// TestUnknownWriteRefusalSaysSo: a refused request for a write the device
// API does not have is not a write to an agent: it goes to the journal,
// saying what it was (it used to say "another host name").
func TestUnknownWriteRefusalSaysSo(t *testing.T) {
	f := newFixture(t)
	var mu sync.Mutex
	var lines []string
	f.api.o.Log = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, string(p))
		return len(p), nil
	}), nil))
	before := f.audit.count()
	if status, b := f.do(t, "POST", "/api/v1/agents/demo/frobnicate", f.cred, `{}`, nil); status != 403 {
		t.Fatalf("no write header: %d %s", status, b)
	}
	if f.audit.count() != before {
		t.Fatalf("audit lines for a write that does not exist: %q", f.audit.all()[before:])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 1 || !strings.Contains(lines[0], "refused a request for a write the device API does not have") || strings.Contains(lines[0], "host name") {
		t.Fatalf("journal: %q", lines)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
