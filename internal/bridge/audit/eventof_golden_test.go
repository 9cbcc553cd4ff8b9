package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// registryBodies are requests of every write of the registry, as a device
// sends them, with the text a line must cut or mask.
var registryBodies = map[string][]string{
	wire.AnswerWrite: {
		`{"requestId":"r-1","conversation":"c-1","question":"q-1","revision":2,"optionIds":["yes"],"always":true,"reason":"fine"}`,
		`{"requestId":"r-2","conversation":"c-1","question":"q-2","revision":1,"text":"hunter2"}`,
		`{"requestId":"r-3","conversation":"c-1","question":"q-3","revision":4,"values":{"name":"Alice"}}`,
	},
	wire.SendWrite: {
		`{"requestId":"r-4","conversation":"c-1","text":"` + strings.Repeat("é", 130) + `","steer":true}`,
		`{"requestId":"r-5","conversation":"c-1","text":"hi \u202e there"}`,
	},
	wire.AbortWrite: {
		`{"requestId":"r-6","conversation":"c-1"}`,
		`{"requestId":"r-7","conversation":"c-1","question":"q-9"}`,
	},
	wire.ActionWrite: {
		`{"requestId":"r-8","action":"deploy","conversation":"c-2"}`,
		`{"requestId":"r-9","action":"deploy"}`,
	},
	wire.RenameWrite: {
		`{"requestId":"r-10","space":"s-1","title":"Work"}`,
		`{"requestId":"r-11","tab":"t-1","title":"Logs"}`,
		`{"requestId":"r-12","conversation":"c-2","title":"` + strings.Repeat("n", 300) + `"}`,
	},
	wire.CloseWrite:   {`{"requestId":"r-13","conversation":"c-2"}`},
	wire.ReopenWrite:  {`{"requestId":"r-14","conversation":"c-2"}`},
	wire.StarterWrite: {`{"requestId":"r-15","starter":"review"}`},
}

// TestGoldenEventOf pins the line of every write of the registry, from a
// request and from none (refused before its body was read), for every
// outcome, in full and masked, and of a device's own settings:
// testdata/eventof.log (go test -update rewrites it after a deliberate
// change). The log's format does not change when the events are described
// another way in Go.
func TestGoldenEventOf(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	prev := strings.Repeat("0", 64)
	results := []Result{OK, Refused("stale-revision"), Failed("the agent is not reachable: \u202e")}
	var out bytes.Buffer
	line := func(ev Event, mask bool) {
		out.Write(encodeLine(nil, at, who, ev, mask, prev))
		out.WriteByte('\n')
	}
	for _, w := range wire.Writes() {
		bodies, ok := registryBodies[w.Name]
		if !ok {
			t.Fatalf("the write %s has no request in registryBodies", w.Name)
		}
		for _, r := range results {
			reqs := []wire.WriteRequest{nil}
			for _, b := range bodies {
				req := w.New()
				if err := json.Unmarshal([]byte(b), req); err != nil {
					t.Fatal(err)
				}
				reqs = append(reqs, req)
			}
			for _, req := range reqs {
				ev, err := EventOf(w.Name, req, r)
				if err != nil {
					t.Fatalf("%s: %v", w.Name, err)
				}
				line(ev, false)
				line(ev, true)
			}
		}
	}
	for _, name := range []string{EventPushSubscribe, EventPushUnsubscribe} {
		for _, r := range results {
			ev, err := EventOf(name, nil, r)
			if err != nil {
				t.Fatal(err)
			}
			line(ev, false)
			line(ev, true)
		}
	}
	line(PushSubscribe{Service: "https://fcm.googleapis.com", Result: OK}, true)
	for i, l := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		r, err := ParseLine(l)
		if err != nil {
			t.Fatalf("line %d %s: %v", i, l, err)
		}
		if err := CheckFields(r); err != nil {
			t.Errorf("line %d %s: %v", i, l, err)
		}
	}
	path := filepath.Join("testdata", "eventof.log")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test -update to write it", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("the lines differ from %s (go test -update rewrites it after a deliberate change):\n%s", path, fmt.Sprint(diffLines(out.Bytes(), want)))
	}
}

// diffLines is the first line where got and want differ.
func diffLines(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var a, b []byte
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if !bytes.Equal(a, b) {
			return fmt.Sprintf("line %d:\ngot:  %s\nwant: %s", i+1, a, b)
		}
	}
	return "the same"
}
