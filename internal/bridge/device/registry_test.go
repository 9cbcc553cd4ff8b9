package device

import (
	"fmt"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// registryBodies is a valid body of each write of the protocol's registry,
// as a device sends it to the demo agent of newFixture. A new write of the
// registry needs one here: the test below fails without it.
var registryBodies = map[string]string{
	wire.AnswerWrite:  `{"requestId":"r-answer","conversation":"c","question":"q1","revision":1,"optionIds":["yes"]}`,
	wire.SendWrite:    `{"requestId":"r-send","conversation":"c","text":"hi"}`,
	wire.AbortWrite:   `{"requestId":"r-abort","conversation":"c"}`,
	wire.ActionWrite:  `{"requestId":"r-action","action":"deploy"}`,
	wire.RenameWrite:  `{"requestId":"r-rename","tab":"t","title":"Logs"}`,
	wire.CloseWrite:   `{"requestId":"r-close","conversation":"c"}`,
	wire.ReopenWrite:  `{"requestId":"r-reopen","conversation":"c"}`,
	wire.StarterWrite: `{"requestId":"r-starter","starter":"tests"}`,
}

// TestRegistryRoutes: every write of the protocol's registry is a device
// route, POST /api/v1/agents/{agent}/NAME, behind the write gate, that
// forwards a request of the write's own type to the agent's route of the
// same row, and is noted in the audit log under its name (D6, A1).
// A name outside the registry is refused with 404 and reaches
// neither the agent nor the audit log as a write.
func TestRegistryRoutes(t *testing.T) {
	f := newFixture(t)
	for i, w := range wire.Writes() {
		body, ok := registryBodies[w.Name]
		if !ok {
			t.Errorf("the write %q has no sample body in registryBodies", w.Name)
			continue
		}
		status, reply := f.write(t, w.Name, body)
		if status != 200 {
			t.Errorf("%s: %d %s", w.Name, status, reply)
			continue
		}
		f.back.mu.Lock()
		req, path := f.back.forwards[len(f.back.forwards)-1], f.back.paths[len(f.back.paths)-1]
		n := len(f.back.forwards)
		f.back.mu.Unlock()
		if n != i+1 || path != w.Path || fmt.Sprintf("%T", req) != fmt.Sprintf("%T", w.New()) {
			t.Errorf("%s: forward %d went to %s as a %T, want %s as a %T", w.Name, n, path, req, w.Path, w.New())
		}
		if b := f.audit.begins(); b[len(b)-1] != f.devID+" demo "+w.Name {
			t.Errorf("%s: the audit intent reads %q", w.Name, b[len(b)-1])
		}
	}
	if len(registryBodies) != len(wire.Writes()) {
		t.Errorf("registryBodies has %d writes, the registry %d", len(registryBodies), len(wire.Writes()))
	}
	before, audited := f.back.count(), len(f.audit.begins())
	for _, name := range []string{"nope", "Answer", "ask", "grants", "answer.x", "send%20"} {
		status, reply := f.write(t, name, registryBodies[wire.SendWrite])
		if status != 404 || !strings.Contains(reply, "there is no write called") {
			t.Errorf("unknown write %q: %d %s, want 404 naming the writes there are", name, status, reply)
		}
	}
	if f.back.count() != before || len(f.audit.begins()) != audited {
		t.Fatal("an unknown write name reached the agent or was audited as a write")
	}
}
