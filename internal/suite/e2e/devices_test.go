package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/testkit/devicetest"
)

// TestDeviceAnswerEndToEnd is the device-answer path with every real part: the
// agent socket-activated with its caller check on, the bridge as a user
// service with the device API on loopback, a device pairing over HTTP and
// answering through the write gate, the agent taking the answer, and the
// audit log recording the taps and the refusals (D6, D9, A1–A3, A5).
func TestDeviceAnswerEndToEnd(t *testing.T) {
	r := startBridge(t, 2*time.Minute, demoBridge())
	collie := r.collie
	dev, paired := r.pair("e2e phone")
	base := dev.base

	// The question arrives through the bridge.
	var st device.State
	waitFor(t, loadGuard, "the demo question over the device API", func() bool {
		dev.call("GET", "/api/v1/state", "", nil, &st)
		return len(st.Agents) == 1 && st.Agents[0].Snapshot != nil && len(questions(st)) == 1
	})
	q := questions(st)[0]
	answer := func(rev int64, reqID string) string {
		b, _ := json.Marshal(map[string]any{"requestId": reqID, "conversation": "main", "question": q.ID, "revision": rev, "optionIds": []string{"yes"}})
		return string(b)
	}
	gate := map[string]string{device.WriteHeader: "1"}
	if status := dev.call("POST", "/api/v1/agents/demo/answer", answer(q.Revision, "x1"), map[string]string{device.WriteHeader: "1", "Origin": "https://evil.invalid"}, nil); status != 403 {
		t.Fatalf("D6 another origin: %d", status)
	}
	if status := dev.call("POST", "/api/v1/agents/demo/answer", answer(q.Revision+7, "x2"), gate, nil); status != 409 {
		t.Fatalf("D9 stale revision: %d", status)
	}
	if status := dev.call("POST", "/api/v1/agents/demo/answer", answer(q.Revision, "ok1"), gate, nil); status != 200 {
		t.Fatalf("the answer: %d", status)
	}
	var refusal struct {
		Error struct{ Code, Message string }
	}
	if status := dev.call("POST", "/api/v1/agents/demo/answer", answer(q.Revision, "ok2"), gate, &refusal); status != 409 || !strings.Contains(refusal.Error.Message, "by e2e phone at") {
		t.Fatalf("D9 a second answer: %d %+v", status, refusal)
	}

	// The agent took it: the question is gone, the answer is in the conversation.
	waitFor(t, loadGuard, "the answered question to leave collie show", func() bool {
		out := collie("show")
		return !strings.Contains(out, "? ") && strings.Contains(out, "user: Yes")
	})

	// A1–A3: the taps and the refusals are in the audit log, and it verifies.
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(collie("audit", "--json")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("collie audit --json: %v: %q", err, l)
		}
		lines = append(lines, m)
	}
	results := map[string]int{}
	for _, l := range lines {
		if l["event"] == "answer" && l["session"] == "demo" && l["device"] == paired.DeviceID {
			results[l["result"].(string)]++
		}
	}
	if results["ok"] != 1 || results["refused"] != 3 {
		t.Fatalf("A1: answer lines by result = %v, want 1 ok and 3 refused\n%v", results, lines)
	}
	collie("audit", "verify")

	// A6: the device can fetch its receipts, without typed text.
	var receipts []struct{ Event, RequestID, Result, Device string }
	if status := dev.call("GET", "/api/v1/receipts", "", nil, &receipts); status != 200 {
		t.Fatalf("receipts: %d", status)
	}
	okAnswer := false
	for _, r := range receipts {
		okAnswer = okAnswer || (r.Event == "answer" && r.RequestID == "ok1" && r.Result == "ok" && r.Device == paired.DeviceID)
	}
	if !okAnswer {
		t.Fatalf("A6: no receipt of the answer: %+v", receipts)
	}

	// A page on another name that resolves here (DNS rebinding) gets nothing.
	rebind := &client{t: t, base: base, cred: dev.cred, host: "rebind.invalid:" + base[strings.LastIndex(base, ":")+1:]}
	if status := rebind.call("GET", "/api/v1/state", "", nil, nil); status != http.StatusMisdirectedRequest {
		t.Fatalf("a request for another host name: %d", status)
	}

	// Revoking cuts the device off at once.
	collie("devices", "revoke", paired.DeviceID)
	if status := dev.call("GET", "/api/v1/state", "", nil, nil); status != 401 {
		t.Fatalf("a revoked device still reads: %d", status)
	}
	// A write with the revoked credential, or a forged one, is a refused
	// write with its line, naming the revoked device or "unknown", never
	// the credential (A1).
	if status := dev.call("POST", "/api/v1/agents/demo/send", `{"requestId":"late","conversation":"main","text":"hi"}`, gate, nil); status != 401 {
		t.Fatalf("a revoked device's write: %d", status)
	}
	forged := &client{t: t, base: base, cred: "forged-" + strings.Repeat("x", 40)}
	if status := forged.call("POST", "/api/v1/agents/demo/abort", `{"requestId":"f1","conversation":"main"}`, gate, nil); status != 401 {
		t.Fatalf("a forged credential's write: %d", status)
	}
	out := collie("audit", "--json")
	for _, want := range []string{`"device":"` + paired.DeviceID + `","event":"send"`, `"device":"unknown","event":"abort"`} {
		if !strings.Contains(strings.ReplaceAll(out, " ", ""), want) {
			t.Fatalf("A1: no line with %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, dev.cred) || strings.Contains(out, forged.cred) {
		t.Fatal("a credential is in the audit log")
	}
	collie("audit", "verify")
}

// pairDevice redeems the offer `collie pair --local --json` printed
// (pairJSON) as a device called name would, and returns that device.
func pairDevice(t *testing.T, pairJSON, name string) (*client, device.PairReply) {
	t.Helper()
	d, paired := devicetest.Pair(t, pairJSON, name)
	return &client{t: t, base: d.Base, cred: d.Cred}, paired
}

func questions(st device.State) (out []struct {
	ID       string
	Revision int64
}) {
	for _, a := range st.Agents {
		for _, sp := range a.Snapshot.Spaces {
			for _, tab := range sp.Tabs {
				for _, c := range tab.Conversations {
					for _, q := range c.Questions {
						out = append(out, struct {
							ID       string
							Revision int64
						}{q.ID, q.Revision})
					}
				}
			}
		}
	}
	return out
}

// client is a paired device talking to the device API.
type client struct {
	t    *testing.T
	base string
	cred string
	host string // the Host header, when not base's
}

func (c *client) call(method, path, body string, hdr map[string]string, out any) int {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if c.host != "" {
		req.Host = c.host
	}
	if c.cred != "" {
		req.Header.Set("Authorization", "Bearer "+c.cred)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		json.Unmarshal(b, out)
	}
	return resp.StatusCode
}
