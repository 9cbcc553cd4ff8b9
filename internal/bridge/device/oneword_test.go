package device

import (
	"encoding/json"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/device/apierr"
)

// TestOneWordingPerRefusal: a refusal says the same whichever route
// refuses it. A credential the bridge refuses gets the same code, sentence
// and hint on a read and on a write (the write gate used to fold the hint
// into its sentence); an agent that is not attached is named alike by a
// read and by a write (a write used to say "no durable agent of that name
// is attached", without the hint).
func TestOneWordingPerRefusal(t *testing.T) {
	f := newFixture(t)
	revoked, id := f.pair(t, "laptop")
	if err := f.api.Revoke(id); err != nil {
		t.Fatal(err)
	}
	body := func(t *testing.T, method, path, cred, send string, want int) apierr.ErrorBody {
		t.Helper()
		status, b := f.do(t, method, path, cred, send, writeHdr)
		var e apierr.ErrorBody
		if err := json.Unmarshal([]byte(b), &e); err != nil || status != want {
			t.Fatalf("%s %s: %d %s", method, path, status, b)
		}
		return e
	}
	send := `{"requestId":"r1","conversation":"c","text":"hi"}`
	for _, tt := range []struct{ name, cred string }{{"none", ""}, {"forged", "forged"}, {"revoked", revoked}} {
		t.Run("unpaired_"+tt.name, func(t *testing.T) {
			read := body(t, "GET", "/api/v1/state", tt.cred, "", 401)
			write := body(t, "POST", "/api/v1/agents/demo/send", tt.cred, send, 401)
			if read != write || read.Error.Hint == "" {
				t.Fatalf("a read is told %+v, a write %+v", read.Error, write.Error)
			}
		})
	}
	t.Run("unknown_agent", func(t *testing.T) {
		read := body(t, "GET", "/api/v1/agents/nobody", f.cred, "", 404)
		write := body(t, "POST", "/api/v1/agents/nobody/send", f.cred, send, 404)
		if read != write || read.Error.Hint == "" {
			t.Fatalf("a read is told %+v, a write %+v", read.Error, write.Error)
		}
	})
}
