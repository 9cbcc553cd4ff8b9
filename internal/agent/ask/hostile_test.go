package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agent/durable/board"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Hostile tool input: an escape sequence that would hide text on a
// terminal, a direction override and a zero-width space, in the title and
// the rationale, and a command of about 100 KB whose last line is what a
// yes would run last.
const (
	hostileTitle = "Deploy \x1b[8mhidden\x1b[0m \u202eniam\u202c to\u200b prod"
	hostileWhy   = "Because \x1b]0;owned\x07 the \u2066build\u2069 is green\u200d."
	tailLine     = "echo hidden-tail >> MARK"
)

func longCommand() string { return strings.Repeat("echo filler-line\n", 6000) + tailLine }

// shown is the open question as a device shows it: the board's snapshot
// through the bridge's cleaning.
func (a *agent) shown(t *testing.T) wire.Question {
	t.Helper()
	a.open(t)
	data, err := json.Marshal(a.board.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := wire.ParseSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Spaces[0].Tabs[0].Conversations {
		if len(c.Questions) > 0 {
			return c.Questions[0]
		}
	}
	t.Fatal("no open question")
	return wire.Question{}
}

// checkCard fails unless q is cleaned, marked "Text shortened" and shows
// the command's tail with the count of the bytes not shown.
func checkCard(t *testing.T, q wire.Question) {
	t.Helper()
	for _, s := range []string{q.Title, q.Rationale} {
		if strings.ContainsAny(s, "\x1b\x07\u202e\u202c\u2066\u2069\u200b\u200d") {
			t.Errorf("not cleaned: %q", s)
		}
	}
	if !q.Shortened {
		t.Errorf("X3: the card is not marked Text shortened: title %q", q.Title)
	}
	if !strings.Contains(q.Rationale, tailLine) || !strings.Contains(q.Rationale, "bytes not shown") {
		t.Errorf("X3: the card hides the tail or does not count what it leaves out:\n%s", q.Rationale)
	}
}

// TestHostileInput_X3_CollieAsk: collie ask and collie-agent ask with a
// hostile title and a 100 KB rationale: the card is cleaned and marked,
// the tail shown, and a yes is a yes.
func TestHostileInput_X3_CollieAsk(t *testing.T) {
	for _, tc := range []struct {
		name, prog string
		remote     bool // an agent environment: through the bridge's agent API
	}{
		{"collie_ask", "collie ask", false},
		{"collie-agent_ask", "collie-agent ask", false},
		{"collie_ask_agent_environment", "collie ask", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := startAgent(t, board.Options{})
			ch := make(chan askResult, 1)
			go func() {
				var out, errb bytes.Buffer
				args := []string{"--yes-no", "--rationale", hostileWhy + "\n" + longCommand(), hostileTitle}
				e := Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: tc.prog}
				if tc.remote {
					// The agent API serves the same route on the agent's
					// board (loginapi tests the bridge's side).
					e.Remote = a.hc
				} else {
					args = append([]string{"--socket", a.path}, args...)
				}
				code := Main(context.Background(), args, e)
				ch <- askResult{code, out.String(), errb.String()}
			}()
			q := a.shown(t)
			checkCard(t, q)
			if want := hostileWhy + "\n" + longCommand(); len(q.Detail) < len(want)-40 || !strings.HasSuffix(q.Detail, "\n"+tailLine) {
				t.Errorf("X3: the card's detail is %d bytes, not the whole %d-byte rationale (cleaned)", len(q.Detail), len(want))
			}
			if q.Title != "Deploy [8mhidden[0m niam to prod" { // the escapes' bytes go, their printable rest stays
				t.Errorf("title %q", q.Title)
			}
			a.answer(t, wire.AnswerRequest{Header: wire.Header{RequestID: "y"}, Conversation: "main", Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
			if res := wait(t, ch); res.code != ExitYes {
				t.Fatalf("exit %d: %s %s", res.code, res.stdout, res.stderr)
			}
		})
	}
}

// TestHostileInput_X3_Hook: Claude Code's hook with a hostile description
// and a 100 KB command: the card is cleaned and marked with the tail in
// view, and a yes allows the call as Claude Code sent it (the decision
// carries no input of its own).
func TestHostileInput_X3_Hook(t *testing.T) {
	a := startAgent(t, board.Options{})
	in, _ := json.Marshal(map[string]any{
		"session_id": "s1", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_hostile", "cwd": "/home/u/\u202eppa",
		"tool_input": map[string]string{"command": longCommand(), "description": hostileWhy},
	})
	ch := runAsk(a, string(in), "--hook", "claude")
	q := a.shown(t)
	checkCard(t, q)
	if !strings.HasSuffix(q.Detail, "$ "+longCommand()) {
		t.Errorf("X3: the card's detail is not the whole command (%d bytes, ends %q)", len(q.Detail), q.Detail[max(0, len(q.Detail)-40):])
	}
	a.answer(t, wire.AnswerRequest{Header: wire.Header{RequestID: "y"}, Conversation: "main", Question: q.ID, Revision: q.Revision, OptionIDs: []string{"yes"}})
	res := wait(t, ch)
	if d := decode(t, res.stdout); d.PermissionDecision != "allow" || strings.Contains(res.stdout, "updatedInput") {
		t.Fatalf("hook output %s", res.stdout)
	}
}

// TestAsk_X3_OldAgentWithoutExtensions: an agent from before the shortened
// field refuses it as an unknown field; collie ask asks again without it
// rather than fail, and the card still counts the bytes not shown.
func TestAsk_X3_OldAgentWithoutExtensions(t *testing.T) {
	dir, err := os.MkdirTemp("", "ask-old-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "old.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	type oldAsk struct { // the request as an agent from before the field reads it
		RequestID, Kind, Title, Rationale string
		WaitSeconds, TimeoutSeconds       int64
	}
	var got []oldAsk
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		var req oldAsk
		if err := dec.Decode(&req); err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(wire.ErrorJSON(wire.CodeBadRequest, `the request body is not valid: unknown field "shortened" in the top-level object (names are case-sensitive)`))
			return
		}
		got = append(got, req)
		json.NewEncoder(w).Encode(wire.AskReply{Question: "q1", Conversation: "main", Status: wire.StatusAnswered, OptionIDs: []string{"yes"}})
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"--socket", path, "--yes-no", "--rationale", longCommand(), "Run it?"},
		Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }, Prog: "collie ask"})
	if code != ExitYes || len(got) != 1 || !strings.Contains(got[0].Rationale, tailLine) {
		t.Fatalf("exit %d (%s), the old agent got %d requests", code, errb.String(), len(got))
	}
}
