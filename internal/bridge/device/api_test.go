package device

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// agentSide stands in for the bridge: what it holds, and every write that
// reached it.
type agentSide struct {
	mu       sync.Mutex
	view     []view.Agent
	forwards []wire.WriteRequest
	paths    []string // the agent's route of each forward
	watching []bool
	// onForward, when set, runs as a write reaches the agent, before it is
	// taken.
	onForward func()
}

func (b *agentSide) View() []view.Agent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

func (b *agentSide) Forward(_ context.Context, agent, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	if b.onForward != nil {
		b.onForward()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if agent != "demo" {
		return nil, ErrUnknownAgent
	}
	b.forwards = append(b.forwards, req)
	b.paths = append(b.paths, path)
	return &wire.WriteReply{RequestID: "ok"}, nil
}

func (b *agentSide) SetWatching(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watching = append(b.watching, on)
}

func (b *agentSide) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.forwards)
}

// auditLog records what the API reports to the audit log.
type auditLog struct {
	mu    sync.Mutex
	begun []string
	lines []string
}

// Begin notes the intent (in begun); the line goes to lines at End.
func (a *auditLog) Begin(d store.Device, agent, write string, req wire.WriteRequest) Outcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.begun = append(a.begun, d.ID+" "+agent+" "+write)
	return endFunc(func(result, reason string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.lines = append(a.lines, d.ID+" "+agent+" "+write+" "+result+" "+reason)
	})
}

type endFunc func(result, reason string)

func (f endFunc) End(result, reason string) { f(result, reason) }

func (a *auditLog) begins() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.begun...)
}

func (a *auditLog) Refused(r Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lines = append(a.lines, r.Device+" "+r.Agent+" "+r.Write+" refused "+r.Code+": "+r.Reason+" count="+itoa(r.Count))
}

func (a *auditLog) Setting(d store.Device, ev audit.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var r audit.Result
	switch e := ev.(type) {
	case audit.PushSubscribe:
		r = e.Result
	case audit.PushUnsubscribe:
		r = e.Result
	}
	a.lines = append(a.lines, d.ID+"  "+ev.Name()+" "+r.String())
}

func (a *auditLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.lines)
}

func (a *auditLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lines...)
}

func (a *auditLog) Receipts(device string, since time.Time) ([]audit.Receipt, error) {
	return []audit.Receipt{{ID: "x", Device: device, Event: "answer", Result: "ok"}}, nil
}

func (a *auditLog) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.lines) == 0 {
		return ""
	}
	return a.lines[len(a.lines)-1]
}

type fixture struct {
	srv   *httptest.Server
	api   *API
	back  *agentSide
	audit *auditLog
	store *store.Store
	path  string // the devices file
	pairs *store.Pairings
	clock *fakeClock
	cred  string
	devID string
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func demoView(rev int64) []view.Agent {
	return []view.Agent{{
		AgentStatus: view.AgentStatus{Name: "demo", Reachable: true},
		Snapshot: &wire.Snapshot{Spaces: []wire.Space{{ID: "s", Tabs: []wire.Tab{{ID: "t", Conversations: []wire.Conversation{{
			ID: "c",
			Questions: []wire.Question{
				{ID: "q1", Kind: wire.AskYesNo, Title: "Deploy?", Revision: rev, ToolCall: "tc-1"},
				{ID: "q2", Kind: wire.AskYesNo, Title: "Run it?", Revision: 1, ToolCall: "tc-2", AllowAlways: true,
					AlwaysScope: &wire.Scope{Tool: "Bash", CommandPrefix: "git ", DurationSeconds: 3600, Text: "Bash: git …, for an hour"}},
			},
		}}}}}}},
	}}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{back: &agentSide{view: demoView(1)}, audit: &auditLog{}, clock: &fakeClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}}
	var err error
	f.path = filepath.Join(t.TempDir(), "devices.json")
	f.store, err = store.OpenStore(f.path, f.clock.now)
	if err != nil {
		t.Fatal(err)
	}
	f.pairs = store.NewPairings(f.clock.now)
	f.srv = httptest.NewUnstartedServer(nil)
	f.api = NewAPI(Options{Backend: f.back, Store: f.store, Pairings: f.pairs, Audit: f.audit,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: f.clock.now, Site: siteOf(t, f.srv)})
	f.srv.Config.Handler = f.api.Handler()
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	t.Cleanup(f.api.Close)
	f.cred, f.devID = f.pair(t, "phone")
	return f
}

// pair makes a pairing offer and redeems it as a device would.
func (f *fixture) pair(t *testing.T, name string) (cred, id string) {
	t.Helper()
	p, err := f.pairs.New()
	if err != nil {
		t.Fatal(err)
	}
	status, body := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"`+name+`"}`, writeHdr)
	if status != 200 {
		t.Fatalf("pair: %d %s", status, body)
	}
	var r PairReply
	json.Unmarshal([]byte(body), &r)
	if r.Code != p.Code {
		t.Fatalf("the device's verification code %q differs from collie pair's %q", r.Code, p.Code)
	}
	return r.Credential, r.DeviceID
}

func (f *fixture) do(t *testing.T, method, path, cred, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var writeHdr = map[string]string{WriteHeader: "1"}

func (f *fixture) write(t *testing.T, name, body string) (int, string) {
	return f.do(t, "POST", "/api/v1/agents/demo/"+name, f.cred, body, writeHdr)
}

// TestWriteGate: each bad request gets its code and message, nothing
// reaches the agent, and the audit log shows the refusal (D6, X4, A1).
func TestWriteGate(t *testing.T) {
	f := newFixture(t)
	answer := func(rev int, q string) string {
		return `{"requestId":"r1","conversation":"c","question":"` + q + `","revision":` + itoa(rev) + `,"optionIds":["yes"]}`
	}
	tests := []struct {
		name    string
		cred    string
		path    string
		body    string
		hdr     map[string]string
		status  int
		code    string
		audited bool
	}{
		{"D6_A1_forged_credential", "forged-credential-AAAAAAAAAAAAAAAAAAAAAAAAA", "answer", answer(1, "q1"), writeHdr, 401, "not-paired", true},
		{"D6_A1_no_credential", "", "answer", answer(1, "q1"), writeHdr, 401, "not-paired", true},
		{"D6_other_origin", f.cred, "answer", answer(1, "q1"), map[string]string{WriteHeader: "1", "Origin": "https://evil.invalid"}, 403, "cross-site", true},
		{"D6_no_write_header", f.cred, "answer", answer(1, "q1"), nil, 403, "cross-site", true},
		{"D9_unknown_question", f.cred, "answer", answer(1, "q9"), writeHdr, 404, wire.CodeUnknownQuestion, true},
		{"D9_stale_revision", f.cred, "answer", answer(0, "q1"), writeHdr, 409, wire.CodeStaleRevision, true},
		{"X4_send_0_bytes", f.cred, "send", `{"requestId":"r2","conversation":"c","text":""}`, writeHdr, 400, wire.CodeBadRequest, true},
		{"X4_send_32769_bytes", f.cred, "send", `{"requestId":"r3","conversation":"c","text":"` + strings.Repeat("a", 32769) + `"}`, writeHdr, 400, wire.CodeBadRequest, true},
		{"unknown_write", f.cred, "frobnicate", `{}`, writeHdr, 404, wire.CodeNotFound, false},
		{"D7_always_on_question_without_offer", f.cred, "answer", `{"requestId":"r4","conversation":"c","question":"q1","revision":1,"optionIds":["yes"],"always":true}`, writeHdr, 422, wire.CodeBadAnswer, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.audit.count()
			req, _ := http.NewRequest("POST", f.srv.URL+"/api/v1/agents/demo/"+tt.path, strings.NewReader(tt.body))
			if tt.cred != "" {
				req.Header.Set("Authorization", "Bearer "+tt.cred)
			}
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var eb wire.ErrorBody
			json.Unmarshal(b, &eb)
			if resp.StatusCode != tt.status || eb.Error.Code != tt.code || eb.Error.Message == "" {
				t.Fatalf("got %d %s, want %d %s with a message", resp.StatusCode, b, tt.status, tt.code)
			}
			if f.back.count() != 0 {
				t.Fatal("a refused write reached the agent")
			}
			f.api.refusals.flushAll() // a repeat of a kind is counted, not written at once
			if audited := f.audit.count() > before; audited != tt.audited {
				t.Fatalf("audited = %v, want %v (%v)", audited, tt.audited, f.audit.lines)
			}
			if tt.audited && !strings.Contains(f.audit.last(), "refused") {
				t.Fatalf("A1: the audit line does not say refused: %q", f.audit.last())
			}
		})
	}
}

// TestIntentBeforeForward: the audit log notes a write before the agent
// gets it and records its outcome after, for writes the agent takes, the
// agent refuses and for an agent that is not there (A1, A5).
func TestIntentBeforeForward(t *testing.T) {
	f := newFixture(t)
	var atForward []string
	f.back.onForward = func() { atForward = f.audit.begins() }
	for i, agent := range []string{"demo", "gone"} {
		body := `{"requestId":"s` + itoa(i) + `","conversation":"c","text":"hello"}`
		status, resp := f.do(t, "POST", "/api/v1/agents/"+agent+"/send", f.cred, body, writeHdr)
		if want := map[string]int{"demo": 200, "gone": 404}[agent]; status != want {
			t.Fatalf("send to %s: %d %s, want %d", agent, status, resp, want)
		}
		if len(atForward) != i+1 || atForward[i] != f.devID+" "+agent+" send" {
			t.Fatalf("A5: at forward time the log had noted %q, want the send to %s", atForward, agent)
		}
		want := map[string]string{"demo": " send ok", "gone": " send refused"}[agent]
		if !strings.Contains(f.audit.last(), want) {
			t.Fatalf("A1: the outcome line %q lacks %q", f.audit.last(), want)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestDecidedOnce: a question is answered once; a second answer is refused
// and says who answered and when (D9).
func TestDecidedOnce(t *testing.T) {
	f := newFixture(t)
	other, _ := f.pair(t, "laptop")
	body := `{"requestId":"a1","conversation":"c","question":"q1","revision":1,"optionIds":["yes"]}`
	if status, b := f.write(t, "answer", body); status != 200 || !strings.Contains(b, `"deviceName":"phone"`) {
		t.Fatalf("first answer: %d %s", status, b)
	}
	status, b := f.do(t, "POST", "/api/v1/agents/demo/answer", other, strings.Replace(body, "a1", "a2", 1), writeHdr)
	if status != 409 || !strings.Contains(b, wire.CodeAlreadyDecided) || !strings.Contains(b, "by phone at 2026-12-02T10:00:00Z") {
		t.Fatalf("second answer: %d %s", status, b)
	}
	if f.back.count() != 1 {
		t.Fatalf("%d answers reached the agent, want 1", f.back.count())
	}
	// The agent took the answer and the question left its snapshot: a late
	// answer is still told who answered, not that the question is unknown.
	f.back.mu.Lock()
	f.back.view = demoView(1)
	qs := f.back.view[0].Snapshot.Spaces[0].Tabs[0].Conversations[0].Questions
	f.back.view[0].Snapshot.Spaces[0].Tabs[0].Conversations[0].Questions = qs[1:]
	f.back.mu.Unlock()
	status, b = f.do(t, "POST", "/api/v1/agents/demo/answer", other, strings.Replace(body, "a1", "a3", 1), writeHdr)
	if status != 409 || !strings.Contains(b, "by phone at") {
		t.Fatalf("late answer after the question left: %d %s", status, b)
	}
}

// TestAlwaysAllowTwoTaps: "always allow" applies only with a confirmation
// bound to (device, question, revision, option) (D7).
func TestAlwaysAllowTwoTaps(t *testing.T) {
	f := newFixture(t)
	body := func(confirm string) string {
		return `{"requestId":"aa","conversation":"c","question":"q2","revision":1,"optionIds":["yes"],"always":true` + confirm + `}`
	}
	status, b := f.write(t, "answer", body(""))
	var cr ConfirmReply
	json.Unmarshal([]byte(b), &cr)
	if status != 428 || cr.Error.Code != "confirm-always" || cr.Confirm == "" || cr.Scope == nil || cr.Scope.Text != "Bash: git …, for an hour" {
		t.Fatalf("first tap: %d %s", status, b)
	}
	if f.back.count() != 0 {
		t.Fatal("D7: the first tap reached the agent")
	}
	// A confirmation for another revision, or from another device, does not count.
	other, _ := f.pair(t, "laptop")
	if status, b := f.do(t, "POST", "/api/v1/agents/demo/answer", other, body(`,"confirm":"`+cr.Confirm+`"`), writeHdr); status != 428 || !strings.Contains(b, "confirm-refused") {
		t.Fatalf("D7 confirmation from another device: %d %s", status, b)
	}
	// That attempt used the token up: the right device must tap again.
	if status, b := f.write(t, "answer", body(`,"confirm":"`+cr.Confirm+`"`)); status != 428 || !strings.Contains(b, "confirm-refused") {
		t.Fatalf("D7 used confirmation: %d %s", status, b)
	}
	_, b = f.write(t, "answer", body(""))
	json.Unmarshal([]byte(b), &cr)
	f.clock.add(ConfirmTTL + time.Second)
	if status, b := f.write(t, "answer", body(`,"confirm":"`+cr.Confirm+`"`)); status != 428 || !strings.Contains(b, "expired") {
		t.Fatalf("D7 stale confirmation: %d %s", status, b)
	}
	_, b = f.write(t, "answer", body(""))
	json.Unmarshal([]byte(b), &cr)
	if status, b := f.write(t, "answer", body(`,"confirm":"`+cr.Confirm+`"`)); status != 200 {
		t.Fatalf("D7 second tap: %d %s", status, b)
	}
	if f.back.count() != 1 || !f.back.forwards[0].(*wire.AnswerRequest).Always {
		t.Fatalf("the confirmed answer did not reach the agent with always set: %+v", f.back.forwards)
	}
}

func TestPairingSecrets(t *testing.T) {
	f := newFixture(t)
	p, _ := f.pairs.New()
	if status, _ := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"x"}`, writeHdr); status != 200 {
		t.Fatal("a fresh secret was refused")
	}
	if status, b := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"x"}`, writeHdr); status != 403 || !strings.Contains(b, "used already") {
		t.Fatalf("replayed secret: %d %s", status, b)
	}
	p2, _ := f.pairs.New()
	f.clock.add(store.PairingTTL + time.Second)
	if status, b := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p2.Secret+`","name":"x"}`, writeHdr); status != 403 || !strings.Contains(b, "expired") {
		t.Fatalf("expired secret: %d %s", status, b)
	}
	for _, d := range f.store.List() {
		if strings.Contains(mustRead(t, f.path), f.cred) || d.CredHash == "" {
			t.Fatal("the devices file holds a credential, not its hash")
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := io.ReadAll(mustOpen(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFeedAndRevoke: a change reaches an open event stream at once; the
// bridge knows a device is looking; revoking cuts the stream off.
func TestFeedAndRevoke(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest("GET", f.srv.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+f.cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if l == want {
					return
				}
			case <-time.After(time.Second):
				t.Fatalf("no %q within a second", want)
			}
		}
	}
	expect("event: change")
	// A change of what the device shows is told; a notice that changed
	// nothing is not.
	f.back.mu.Lock()
	f.back.view = demoView(2)
	f.back.mu.Unlock()
	f.api.Changed()
	expect("event: change")
	f.back.mu.Lock()
	watching := append([]bool(nil), f.back.watching...)
	f.back.mu.Unlock()
	if len(watching) != 1 || !watching[0] {
		t.Fatalf("K8: watching = %v, want [true]", watching)
	}
	if err := f.api.Revoke(f.devID); err != nil {
		t.Fatal(err)
	}
	select {
	case _, ok := <-lines:
		for ok {
			_, ok = <-lines
		}
	case <-time.After(2 * time.Second):
		t.Fatal("revoking did not cut the live stream off")
	}
	if status, _ := f.write(t, "send", `{"requestId":"x","conversation":"c","text":"hi"}`); status != 401 {
		t.Fatalf("a revoked credential still writes: %d", status)
	}
}

func TestFlood(t *testing.T) {
	f := newFixture(t)
	limited := 0
	for i := 0; i < 40; i++ {
		status, _ := f.write(t, "send", `{"requestId":"f`+itoa(i)+`","conversation":"c","text":"hi"}`)
		if status == 429 {
			limited++
		}
	}
	if limited == 0 || f.back.count() > 21 {
		t.Fatalf("a flood of 40 writes: %d limited, %d reached the agent", limited, f.back.count())
	}
	if !strings.Contains(f.audit.last(), "refused") {
		t.Fatalf("A1: the flood's refusals are not audited: %q", f.audit.last())
	}
}

// TestErrorHintApart: the device API keeps an error's fix apart from its
// message, as the CLI's error: and hint: lines do.
func TestErrorHintApart(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		method, path, cred string
		status             int
		code, hint         string
	}{
		{"GET", "/api/v1/state", "", 401, "not-paired", "pair it again with: collie pair"},
		{"GET", "/api/v1/agents/nobody", f.cred, 404, wire.CodeUnknownTarget, "read /api/v1/state for the list"},
		{"POST", "/api/v1/agents/demo/frobnicate", f.cred, 404, wire.CodeNotFound, "use one of answer, send"},
	} {
		status, body := f.do(t, tt.method, tt.path, tt.cred, "{}", writeHdr)
		var eb apierr.ErrorBody
		if err := json.Unmarshal([]byte(body), &eb); err != nil || status != tt.status || eb.Error.Code != tt.code {
			t.Fatalf("%s %s: %d %s", tt.method, tt.path, status, body)
		}
		if !strings.HasPrefix(eb.Error.Hint, tt.hint) || eb.Error.Message == "" || strings.Contains(eb.Error.Message, eb.Error.Hint) {
			t.Errorf("%s %s: message %q, hint %q; want the hint %q apart from the message", tt.method, tt.path, eb.Error.Message, eb.Error.Hint, tt.hint)
		}
	}
}
