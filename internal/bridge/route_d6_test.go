package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// d6Agent is a real durable agent (a durable.Server with the reference
// agent's board) on a private socket in the test's temporary folder: the
// folder made 0700 by durable.Listen, the socket 0600 (T5).
type d6Agent struct {
	sock  string
	board *board.Board
	stop  func()
}

// startD6Agent serves an agent at sock with transport tr and one open
// yes-no question, q1, in its conversation "main".
func startD6Agent(t *testing.T, sock string, tr durable.Transport) *d6Agent {
	t.Helper()
	l, _, err := durable.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := durable.NewServer(wire.Hello{Agent: filepath.Base(sock)}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	o := board.Options{Space: wire.Space{ID: "s", Title: "Space"}, Tab: wire.Space{ID: "t", Title: "Tab"}, Log: quiet}
	o.Main.ID, o.Main.Title = "main", "Main"
	b, err := board.New(srv, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pose("main", wire.AskRequest{RequestID: "ask-1", Kind: wire.AskYesNo, Title: "Deploy?"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeTransport(ctx, l, tr) }()
	var stopped bool
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %s: %v", sock, err)
		}
		b.Stop()
	}
	t.Cleanup(stop)
	return &d6Agent{sock: sock, board: b, stop: stop}
}

// d6Reply is what the device API answers to a write.
type d6Reply struct {
	Status int
	Code   string // the error's code; "" on success
	Msg    string
	Body   string
}

// TestD6Route: a write from a paired device goes through the real device
// API (httptest), the real bridge's Forward and the real socket client to
// a real agent on a private socket, without root or systemd; the device
// gets the agent's reply, or its refusal, or why the agent could not be
// reached, and the audit log has the write's intent line before its
// outcome, for every one of them (D6, C2, T3, T4, A1, A5).
func TestD6Route(t *testing.T) {
	tmp := t.TempDir()
	// "open" has the caller check off (the agent's explicit choice, C3);
	// "checked" has the real check on, and this test's process is the
	// agent itself, so it refuses every write (C2).
	open := startD6Agent(t, filepath.Join(tmp, "open", "desk", "open.sock"), durable.Transport{Unchecked: true})
	checked := startD6Agent(t, filepath.Join(tmp, "checked", "desk", "checked.sock"), durable.Transport{})

	auditDir := filepath.Join(tmp, "state")
	alog, _, err := audit.Open(audit.Options{Dir: auditDir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	rec := Auditor{Log: alog, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h, b := startWith(t, func(o *Options) { o.Audit = rec },
		sources.Source{Name: "open", Socket: open.sock}, sources.Source{Name: "checked", Socket: checked.sock})
	h.waitFor(t, "both agents read", func(m map[string]view.AgentStatus) bool {
		return m["open"].Reachable && m["checked"].Reachable
	})
	var q wire.Question // the same at both agents: each board numbers its own
	waitView(t, b, "the question in both agents' views", func(v map[string]*wire.Snapshot) bool {
		var ok bool
		q, ok = openQuestion(v["open"], "main")
		q2, ok2 := openQuestion(v["checked"], "main")
		return ok && ok2 && q2.ID == q.ID && q2.Revision == q.Revision
	})
	answer := func(requestID, option string) string {
		return fmt.Sprintf(`{"requestId":%q,"conversation":"main","question":%q,"revision":%d,"optionIds":[%q]}`, requestID, q.ID, q.Revision, option)
	}

	st, err := store.OpenStore(filepath.Join(tmp, "state", "devices.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	phone, cred, err := st.Add("phone")
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	api := device.NewAPI(device.Options{Backend: b, Store: st, Pairings: store.NewPairings(nil), Audit: rec, Site: policy.NewSite("http", host, port)})
	handler = api.Handler()
	srv.Start()
	t.Cleanup(func() { srv.Close(); api.Close() })

	write := func(agent, name, body string) d6Reply {
		t.Helper()
		req, err := http.NewRequest("POST", srv.URL+"/api/v1/agents/"+agent+"/"+name, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set(device.WriteHeader, "1")
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(data, &e)
		return d6Reply{Status: resp.StatusCode, Code: e.Error.Code, Msg: e.Error.Message, Body: string(data)}
	}

	desk := filepath.Dir(open.sock)
	tests := []struct {
		name         string
		before       func(t *testing.T) // breaks what the case needs broken
		agent, write string
		body         string
		status       int
		code         string // the device's error code; "" for success
		msg          string // in the device's message and the audit line's reason
		reply        string // in the body of a write the agent took
		event        string // the audit event (A3)
		result       string // the outcome line's result
	}{
		{
			name: "agent_refuses_an_answer_that_does_not_fit", agent: "open", write: "answer",
			body:   answer("r-maybe", "maybe"),
			status: 422, code: wire.CodeBadAnswer, msg: `a yes-no question takes optionIds ["yes"] or ["no"]`, event: "answer", result: audit.StatusRefused,
		},
		{
			name: "D6_answer_reaches_the_agent", agent: "open", write: "answer",
			body:   answer("r-ok", "yes"),
			status: 200, reply: `"requestId":"r-ok","conversation":"main","decision":{"device":"`, event: "answer", result: audit.StatusOK,
		},
		{
			name: "C2_agent_refuses_the_caller_answer", agent: "checked", write: "answer",
			body:   answer("r-c2", "yes"),
			status: 403, code: wire.CodeCallerRefused, msg: "the caller is the agent itself", event: "answer", result: audit.StatusRefused,
		},
		{
			name: "C2_agent_refuses_the_caller_send", agent: "checked", write: "send",
			body:   `{"requestId":"r-c2-send","conversation":"main","text":"hello"}`,
			status: 403, code: wire.CodeCallerRefused, msg: "the caller is the agent itself", event: "send", result: audit.StatusRefused,
		},
		{
			name: "agent_refuses_an_unknown_conversation", agent: "open", write: "send",
			body:   `{"requestId":"r-nope","conversation":"nope","text":"hello"}`,
			status: 404, code: wire.CodeUnknownTarget, msg: `there is no conversation "nope"`, event: "send", result: audit.StatusRefused,
		},
		{
			name: "D6_unknown_agent", agent: "ghost", write: "send",
			body:   `{"requestId":"r-ghost","conversation":"main","text":"hello"}`,
			status: 404, code: wire.CodeUnknownTarget, msg: `no durable agent called "ghost" is attached`, event: "send", result: audit.StatusRefused,
		},
		{
			name:   "T3_folder_mode_broken",
			before: func(t *testing.T) { chmod(t, desk, 0o755) },
			agent:  "open", write: "send",
			body:   `{"requestId":"r-t3","conversation":"main","text":"hello"}`,
			status: 502, code: "agent-unreachable", msg: "the socket's folder " + desk + " has mode 0755, not 0700",
			event: "send", result: audit.StatusFailed,
		},
		{
			name: "T4_socket_gone",
			before: func(t *testing.T) {
				chmod(t, desk, 0o700)
				open.stop()
				if err := os.Remove(open.sock); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			},
			agent: "open", write: "send",
			body:   `{"requestId":"r-gone","conversation":"main","text":"hello"}`,
			status: 502, code: "agent-unreachable", msg: "no socket at " + open.sock,
			event: "send", result: audit.StatusFailed,
		},
	}
	seen := 0 // audit lines read so far
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before(t)
			}
			got := write(tt.agent, tt.write, tt.body)
			if got.Status != tt.status || got.Code != tt.code || !strings.Contains(got.Msg, tt.msg) || !strings.Contains(got.Body, tt.reply) {
				t.Errorf("the device got %d %q %q, want %d %q with %q; body %s, want %s in it", got.Status, got.Code, got.Msg, tt.status, tt.code, tt.msg, got.Body, tt.reply)
			}
			lines := auditLines(t, auditDir)
			if len(lines) != seen+2 {
				t.Fatalf("A1/A5: the write left %d audit lines, want its intent and its outcome:\n%s", len(lines)-seen, strings.Join(lines[seen:], "\n"))
			}
			intent, end := decodeLine(t, lines[seen]), decodeLine(t, lines[seen+1])
			seen = len(lines)
			for _, l := range []map[string]any{intent, end} {
				if l["event"] != tt.event || l["session"] != tt.agent || l["device"] != phone.ID {
					t.Errorf("A2/A3: line %v, want event %s, session %s, device %s", l, tt.event, tt.agent, phone.ID)
				}
			}
			if intent["result"] != audit.StatusPending {
				t.Errorf("A5: the line written before forwarding has result %v, want pending: %v", intent["result"], intent)
			}
			if end["result"] != tt.result || end["intent"] == nil || end["intent"] != end["prev"] {
				t.Errorf("A5: the outcome line %v, want result %s and intent naming the line before it", end, tt.result)
			}
			if reason, _ := end["reason"].(string); tt.result != audit.StatusOK && (reason == "" || !strings.Contains(reason, tt.msg)) {
				t.Errorf("the outcome line's reason %q lacks %q", reason, tt.msg)
			}
		})
	}

	// The answer the device sent decided the question at the agent that
	// took it; the agent that refused the caller still has its question.
	waitView(t, b, "the question decided at open, still open at checked", func(v map[string]*wire.Snapshot) bool {
		_, atOpen := openQuestion(v["open"], "main")
		_, atChecked := openQuestion(v["checked"], "main")
		return !atOpen && atChecked
	})
	if rep, err := audit.Verify(auditDir); err != nil || !rep.Intact() || len(rep.Unfinished) != 0 {
		t.Fatalf("A5: the log does not verify whole with every write ended: %+v %v", rep, err)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// waitView polls the bridge's view until ok holds, or fails after 5 s.
func waitView(t *testing.T, b *Bridge, what string, ok func(map[string]*wire.Snapshot) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		v := map[string]*wire.Snapshot{}
		for _, a := range b.View() {
			v[a.Name] = a.Snapshot
		}
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 5s waiting for %s", what)
		}
		<-tick.C
	}
}

// openQuestion is the first open question of conversation conv in s.
func openQuestion(s *wire.Snapshot, conv string) (wire.Question, bool) {
	if s == nil {
		return wire.Question{}, false
	}
	for _, sp := range s.Spaces {
		for _, tab := range sp.Tabs {
			for _, c := range tab.Conversations {
				if c.ID == conv && len(c.Questions) > 0 {
					return c.Questions[0], true
				}
			}
		}
	}
	return wire.Question{}, false
}

func auditLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func decodeLine(t *testing.T, line string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("audit line %q: %v", line, err)
	}
	return m
}
