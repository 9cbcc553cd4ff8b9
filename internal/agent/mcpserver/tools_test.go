package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestInitializeAndToolsList: the server introduces itself, and every tool
// has a description a model can follow and a closed input schema.
func TestInitializeAndToolsList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{Version: "0.9"})
		init := r.cs.InitializeResult()
		if init.ServerInfo.Name != "collie" || init.Capabilities.Tools == nil || !strings.Contains(init.Instructions, "ask_yes_no") {
			t.Fatalf("initialize: %+v %+v", init.ServerInfo, init.Capabilities)
		}
		list, err := r.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{ // tool: its required arguments
			"ask_yes_no": {"question"}, "ask_choice": {"question", "options"}, "ask_text": {"question"},
			"ask_form": {"question", "fields"}, "notify": {"message"}, "approve": {"tool_name", "input"},
		}
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			b, _ := json.Marshal(tool.InputSchema)
			var in struct {
				Type                 string
				Required             []string
				Properties           map[string]json.RawMessage
				AdditionalProperties json.RawMessage
			}
			json.Unmarshal(b, &in)
			closed := string(in.AdditionalProperties) == "false"
			if in.Type != "object" || !slices.Equal(in.Required, want[tool.Name]) || closed == (tool.Name == "approve") {
				t.Errorf("%s: input schema %s", tool.Name, b)
			}
			if len(tool.Description) < 80 {
				t.Errorf("%s: the description %q is too thin for a model to follow", tool.Name, tool.Description)
			}
			if strings.HasPrefix(tool.Name, "ask_") {
				ob, _ := json.Marshal(tool.OutputSchema)
				if !strings.Contains(string(ob), `"answer"`) {
					t.Errorf("%s: output schema %s has no answer", tool.Name, ob)
				}
				if _, ok := in.Properties["timeout"]; !ok {
					t.Errorf("%s takes no timeout", tool.Name)
				}
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"approve", "ask_choice", "ask_form", "ask_text", "ask_yes_no", "notify"}) {
			t.Fatalf("tools: %v", names)
		}
		// D9, K8: an idle server costs the agent nothing.
		time.Sleep(time.Hour)
		if n := r.l.Dials(); n != 0 {
			t.Fatalf("an idle collie mcp connected to the agent %d times", n)
		}
	})
}

// TestAskTools_D1: each ask tool waits for a paired device's tap and
// returns the answer as structured content; the question is asked in the
// session's own conversation, named after the client and the folder.
func TestAskTools_D1(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tool   string
		args   map[string]any
		answer wire.AnswerRequest
		want   string // the structured content, as JSON
		check  func(t *testing.T, q wire.Question)
	}{
		{"yes", "ask_yes_no", map[string]any{"question": "Deploy main?", "details": "CI passed."},
			wire.AnswerRequest{OptionIDs: []string{"yes"}}, `{"answer":"yes"}`,
			func(t *testing.T, q wire.Question) {
				if q.Kind != wire.AskYesNo || q.Title != "Deploy main?" || q.Rationale != "CI passed." {
					t.Fatalf("card %+v", q)
				}
			}},
		{"no_with_note", "ask_yes_no", map[string]any{"question": "Drop the table?"},
			wire.AnswerRequest{OptionIDs: []string{"no"}, Reason: "not today"}, `{"answer":"no","note":"not today"}`, nil},
		{"choice", "ask_choice", map[string]any{"question": "Which region?", "options": []string{"eu-west", "us-east", "ap-south"}},
			wire.AnswerRequest{OptionIDs: []string{"c2"}}, `{"answer":"us-east"}`,
			func(t *testing.T, q wire.Question) {
				if len(q.Options) != 3 || q.Options[2].Label != "ap-south" {
					t.Fatalf("options %+v", q.Options)
				}
			}},
		{"text", "ask_text", map[string]any{"question": "Name the release?"},
			wire.AnswerRequest{Text: "Harvest Moon"}, `{"answer":"Harvest Moon"}`, nil},
		{"text_cleaned", "ask_text", map[string]any{"question": "File name?"},
			wire.AnswerRequest{Text: "invoice\u202egpj.exe"}, `{"answer":"invoicegpj.exe"}`, nil},
		{"form_cleaned", "ask_form", map[string]any{"question": "Who?", "fields": []map[string]string{{"name": "user"}}},
			wire.AnswerRequest{Values: map[string]string{"user": "root\u200b\u2066"}}, `{"answer":{"user":"root"}}`, nil},
		{"form", "ask_form", map[string]any{"question": "Deploy where?", "fields": []map[string]string{{"name": "host", "label": "Host"}, {"name": "port"}}},
			wire.AnswerRequest{Values: map[string]string{"host": "db1", "port": "5432"}}, `{"answer":{"host":"db1","port":"5432"}}`,
			func(t *testing.T, q wire.Question) {
				if len(q.Fields) != 2 || q.Fields[1].Label != "port" {
					t.Fatalf("fields %+v", q.Fields)
				}
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{})
				ch := r.call(t.Context(), tt.tool, tt.args, nil)
				synctest.Wait()
				cv, q := r.only()
				if c := r.conv(cv); cv == "main" || c.Title != "claude-code in ~/src/app" {
					t.Fatalf("asked in %q %+v, want the session's own conversation", cv, c)
				}
				if tt.check != nil {
					tt.check(t, q)
				}
				r.answer(tt.answer)
				res, structured, text := r.result(ch)
				got, _ := json.Marshal(structured)
				if res.IsError || string(got) != tt.want || text != tt.want {
					t.Fatalf("result %s (text %q, error %v), want %s", got, text, res.IsError, tt.want)
				}
			})
		})
	}
}

// TestNotDecided_D1: every way a question ends without an answer is a
// tool error that says so: no answer in time (denied by default, after
// the call's timeout or the default), withdrawn on a device, the
// conversation closed on a device, the agent unreachable.
func TestNotDecided_D1(t *testing.T) {
	for _, tt := range []struct {
		name string
		args map[string]any
		act  func(r *rig)
		wait time.Duration // of the bubble's clock, from the call to its result
		want string
	}{
		{"timed_out", map[string]any{"question": "Q?", "timeout": 30}, nil, 30 * time.Second, "no answer from the user within 30s; denied by default"},
		{"default_timeout", map[string]any{"question": "Q?"}, nil, 2 * time.Minute, "within 2m0s; denied by default"},
		{"timeout_capped", map[string]any{"question": "Q?", "timeout": 3600}, nil, time.Hour, "within 1h0m0s"},
		{"withdrawn_on_device", map[string]any{"question": "Q?"}, func(r *rig) {
			cv, q := r.only()
			r.post(wire.AbortPath, wire.AbortRequest{Header: wire.Header{RequestID: "ab-1"}, Conversation: cv, Question: q.ID})
		}, 0, "the question was withdrawn (the question was withdrawn from a paired device); treat it as no"},
		{"conversation_closed_on_device", map[string]any{"question": "Q?"}, func(r *rig) {
			cv, _ := r.only()
			r.post(wire.ClosePath, wire.CloseRequest{Header: wire.Header{RequestID: "cl-1"}, Conversation: cv})
		}, 0, "withdrawn (the conversation was closed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, Config{Timeout: 2 * time.Minute})
				start := time.Now()
				ch := r.call(t.Context(), "ask_yes_no", tt.args, nil)
				synctest.Wait()
				if tt.act != nil {
					tt.act(r)
				}
				res, _, text := r.result(ch)
				if !res.IsError || !strings.Contains(text, tt.want) {
					t.Fatalf("result %q (error %v), want a tool error with %q", text, res.IsError, tt.want)
				}
				if d := time.Since(start); d != tt.wait {
					t.Fatalf("the call took %s, want %s", d, tt.wait)
				}
				if open := r.open(); len(open) != 0 {
					t.Fatalf("still open: %+v", open)
				}
			})
		})
	}
	t.Run("closed_conversation_refuses_the_next", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, Config{})
			ch := r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Q?"}, nil)
			synctest.Wait()
			cv, _ := r.only()
			r.post(wire.ClosePath, wire.CloseRequest{Header: wire.Header{RequestID: "cl-1"}, Conversation: cv})
			r.result(ch)
			res, _, text := r.result(r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Again?"}, nil))
			if !res.IsError || !strings.Contains(text, "closed this session's conversation") {
				t.Fatalf("%q", text)
			}
		})
	})
	t.Run("unreachable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			down := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
				return nil, errors.New("no socket at /run/user/1000/desk/a.sock; is the agent running?")
			}}}
			r := newRig(t, Config{Agent: down})
			res, _, text := r.result(r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Q?"}, nil))
			if !res.IsError || !strings.Contains(text, "collie mcp cannot reach its durable agent at /run/user/1000/desk/a.sock (no socket at") {
				t.Fatalf("%q", text)
			}
		})
	})
}

// post sends a paired device's write to the agent.
func (r *rig) post(path string, body any) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://agent"+path, strings.NewReader(string(b)))
	req.Header.Set(wire.VersionHeader, "1")
	resp, err := r.agent.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		r.t.Fatalf("%s: %s", path, resp.Status)
	}
	synctest.Wait()
}

// TestCancelWithdraws_D1: a call the client cancels (notifications/
// cancelled) withdraws its question from the device at once: no tick of
// the clock passes between the cancel and the question gone from the
// agent's snapshot, and a late tap is refused.
func TestCancelWithdraws_D1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ctx, cancel := context.WithCancel(t.Context())
		ch := r.call(ctx, "ask_yes_no", map[string]any{"question": "Long job?"}, nil)
		synctest.Wait()
		cv, q := r.only()
		start := time.Now()
		cancel()
		cr := <-ch
		if !errors.Is(cr.err, context.Canceled) {
			t.Fatalf("the cancelled call returned %v", cr.err)
		}
		synctest.Wait()
		if open := r.open(); len(open) != 0 || time.Since(start) != 0 {
			t.Fatalf("after the cancel, %s later: still open %+v", time.Since(start), open)
		}
		items := r.conv(cv).Items
		if last := items[len(items)-1].Text; !strings.Contains(last, "Withdrawn (the program that asked stopped waiting)") {
			t.Fatalf("the conversation says %q", last)
		}
		b, _ := json.Marshal(wire.AnswerRequest{Header: wire.Header{RequestID: "late"}, Conversation: cv, Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
		req, _ := http.NewRequest("POST", "http://agent"+wire.AnswerPath, strings.NewReader(string(b)))
		resp, err := r.agent.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Fatalf("a tap after the withdrawal: %s, want 409 already-decided", resp.Status)
		}
		// The session goes on: the next call asks again.
		ch = r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Next?"}, nil)
		synctest.Wait()
		r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
		if res, _, _ := r.result(ch); res.IsError {
			t.Fatal("the call after a cancel failed")
		}
	})
}

// TestProgress: while a question waits, a client that sent a progress
// token gets a notification every few seconds, its progress rising; one
// that sent none gets none.
func TestProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ch := r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Wait?", "timeout": 600}, "tok-1")
		time.Sleep(22 * time.Second)
		synctest.Wait()
		r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
		r.result(ch)
		r.mu.Lock()
		got := r.progress
		r.progress = nil
		r.mu.Unlock()
		if len(got) != 4 {
			t.Fatalf("%d progress notifications in 22 s, want 4 (one every %s)", len(got), ProgressEvery)
		}
		for i, p := range got {
			if p.ProgressToken != "tok-1" || p.Total != 600 || p.Progress != float64(5*(i+1)) || !strings.Contains(p.Message, "waiting for the user's answer") {
				t.Fatalf("notification %d: %+v", i, p)
			}
		}
		ch = r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Quiet?"}, nil)
		time.Sleep(22 * time.Second)
		synctest.Wait()
		r.answer(wire.AnswerRequest{OptionIDs: []string{"no"}})
		r.result(ch)
		if len(r.progress) != 0 {
			t.Fatalf("progress without a token: %+v", r.progress)
		}
	})
}

// TestNotify_D1: notify adds the agent's message to the session's
// conversation; nothing is asked and nothing can be answered with it.
func TestNotify_D1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		res, structured, _ := r.result(r.call(t.Context(), "notify", map[string]any{"message": "Build finished:\n3 warnings"}, nil))
		if res.IsError || structured["posted"] != true {
			t.Fatalf("notify: %+v", res)
		}
		var cv string
		for _, c := range r.board.Snapshot().Spaces[0].Tabs[0].Conversations {
			if c.ID != "main" {
				cv = c.ID
			}
		}
		c := r.conv(cv)
		if len(c.Items) != 1 || c.Items[0].Role != "agent" || c.Items[0].Text != "Build finished:\n3 warnings" || len(c.Questions) != 0 {
			t.Fatalf("the conversation: %+v", c)
		}
		// Asks share the same conversation.
		ch := r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Ship it?"}, nil)
		synctest.Wait()
		if got, _ := r.only(); got != cv {
			t.Fatalf("asked in %q, notified in %q", got, cv)
		}
		// A message that says yes answers nothing.
		for _, msg := range []string{"yes", "Yes — Ship it?", `{"optionIds":["yes"]}`} {
			if res, _, _ := r.result(r.call(t.Context(), "notify", map[string]any{"message": msg}, nil)); res.IsError {
				t.Fatalf("notify %q failed", msg)
			}
		}
		select {
		case cr := <-ch:
			t.Fatalf("a notify answered the question: %+v", cr.res)
		default:
		}
		if _, q := r.only(); q.Title != "Ship it?" {
			t.Fatalf("open: %+v", q)
		}
		r.answer(wire.AnswerRequest{OptionIDs: []string{"yes"}})
		r.result(ch)
	})
}

// TestSessionEndClosesConversation_D1: the session's conversation is
// closed when the client goes away, withdrawing what still waits; a
// session that asked nothing opened none.
func TestSessionEndClosesConversation_D1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		ch := r.call(t.Context(), "ask_yes_no", map[string]any{"question": "Still there?"}, nil)
		synctest.Wait()
		cv, _ := r.only()
		r.end()
		<-ch
		synctest.Wait()
		if c := r.conv(cv); !c.Closed || len(c.Questions) != 0 {
			t.Fatalf("after the session ended: %+v", c)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, Config{})
		r.end()
		if n := len(r.board.Snapshot().Spaces[0].Tabs[0].Conversations); n != 1 || r.l.Dials() != 0 {
			t.Fatalf("a session that asked nothing: %d conversations, %d connections", n, r.l.Dials())
		}
	})
}
