package audit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

var update = flag.Bool("update", false, "rewrite the golden logs in testdata")

// long is a sent text of 200 characters, 2 bytes each past the first 100.
var long = strings.Repeat("a", 100) + strings.Repeat("é", 100)

// eventCases are one line of every event and outcome, with the detail
// fields A3 lets each keep, in order, and some of their values.
var eventCases = []struct {
	name   string
	ev     Event
	keys   []string       // between event and prev
	values map[string]any // as encoding/json reads them
	secret string         // typed text the line must not hold
}{
	{"A3_answer_optionIds", Answer{RequestID: "r-1", Question: "q-1", Revision: 3, Answered: OptionIDs(wire.Yes), Result: OK},
		[]string{"requestId", "question", "revision", "optionIds", "result"},
		map[string]any{"requestId": "r-1", "question": "q-1", "revision": 3.0, "optionIds": []any{"yes"}, "result": "ok"}, ""},
	{"A3_answer_text_keeps_kind_not_words", AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-2"}, Conversation: "c-1", Question: "q-2", Revision: 1, Text: "hunter2 is my password", Reason: "because"}, OK),
		[]string{"requestId", "question", "revision", "answer", "result"},
		map[string]any{"answer": "text", "revision": 1.0}, "hunter2"},
	{"A3_answer_values_keeps_kind_not_words", AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-3"}, Question: "q-3", Revision: 2, Values: map[string]string{"name": "Alice Liddell"}}, OK),
		[]string{"requestId", "question", "revision", "answer", "result"},
		map[string]any{"answer": "values"}, "Alice"},
	{"A3_answer_refused_has_reason", AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-4"}, Question: "q-1", Revision: 2, OptionIDs: []string{"no"}}, Refused("stale-revision")),
		[]string{"requestId", "question", "revision", "optionIds", "result", "reason"},
		map[string]any{"result": "refused", "reason": "stale-revision", "optionIds": []any{"no"}}, ""},
	{"A3_send_turn_preview_120_chars", SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-5"}, Conversation: "c-1", Text: long, Steer: true}, OK),
		[]string{"requestId", "turn", "steer", "preview", "result"},
		map[string]any{"turn": "c-1", "steer": true, "preview": long[:100+2*20]}, long},
	{"A3_send_question", Send{RequestID: "r-6", On: Question("q-9"), Text: "short", Result: Failed("the agent is not reachable")},
		[]string{"requestId", "question", "steer", "preview", "result", "reason"},
		map[string]any{"question": "q-9", "steer": false, "preview": "short", "result": "failed"}, ""},
	{"A3_send_refused_X4_too_long", SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-7"}, Conversation: "c-1", Text: strings.Repeat("x", 32769)}, Refused("text-too-long")),
		[]string{"requestId", "turn", "steer", "preview", "result", "reason"},
		map[string]any{"preview": strings.Repeat("x", 120)}, ""},
	{"A3_abort_turn", AbortOf(wire.AbortRequest{Header: wire.Header{RequestID: "r-8"}, Conversation: "c-1"}, OK),
		[]string{"requestId", "turn", "result"}, map[string]any{"turn": "c-1"}, ""},
	{"A3_abort_question", AbortOf(wire.AbortRequest{Header: wire.Header{RequestID: "r-9"}, Conversation: "c-1", Question: "q-4"}, Refused("nothing-running")),
		[]string{"requestId", "question", "result", "reason"}, map[string]any{"question": "q-4"}, ""},
	{"A3_action", ActionOf(wire.ActionRequest{Header: wire.Header{RequestID: "r-10"}, Action: "deploy", Conversation: "c-2"}, OK),
		[]string{"requestId", "actionId", "turn", "result"}, map[string]any{"actionId": "deploy", "turn": "c-2"}, ""},
	{"A3_starter_start", StarterOf(wire.StarterRequest{Header: wire.Header{RequestID: "r-11"}, Starter: "review"}, OK),
		[]string{"starterId", "requestId", "result"}, map[string]any{"starterId": "review", "requestId": "r-11"}, ""},
	{"A3_durable_reopen", ReopenOf(wire.ReopenRequest{Header: wire.Header{RequestID: "r-12"}, Conversation: "c-3"}, OK),
		[]string{"conversation"}, map[string]any{"conversation": "c-3"}, ""},
	{"A3_durable_reopen_refused", ReopenOf(wire.ReopenRequest{Header: wire.Header{RequestID: "r-13"}, Conversation: "c-3"}, Refused("unknown-target")),
		[]string{"conversation", "result", "reason"}, map[string]any{"result": "refused"}, ""},
	{"A3_space_rename", RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-14"}, Space: "s-1", Title: "Work"}, OK),
		[]string{"space", "name"}, map[string]any{"space": "s-1", "name": "Work"}, ""},
	{"A3_pane_close", CloseOf(wire.CloseRequest{Header: wire.Header{RequestID: "r-15"}, Conversation: "c-4"}, OK),
		[]string{"conversation"}, map[string]any{"conversation": "c-4"}, ""},
	{"A3_pane_rename", RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-16"}, Conversation: "c-4", Title: "Build"}, OK),
		[]string{"conversation", "name"}, map[string]any{"conversation": "c-4", "name": "Build"}, ""},
	{"A3_tab_rename", RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-17"}, Tab: "t-1", Title: "Logs"}, OK),
		[]string{"tab", "name"}, map[string]any{"tab": "t-1", "name": "Logs"}, ""},
	{"A3_tab_rename_failed", TabRename{Tab: "t-1", NewName: "Logs", Result: Failed("timeout")},
		[]string{"tab", "name", "result", "reason"}, map[string]any{"result": "failed", "reason": "timeout"}, ""},
	{"A3_push_subscribe", PushSubscribe{Service: "https://fcm.googleapis.com", Result: OK},
		[]string{"service"}, map[string]any{"service": "https://fcm.googleapis.com"}, ""},
	{"A3_push_unsubscribe_refused", PushUnsubscribe{Result: Refused("cross-site")},
		[]string{"result", "reason"}, map[string]any{"result": "refused"}, ""},
}

// TestEventFields checks that each event's line keeps exactly the fields
// A3 lists for it, nothing more, and never typed words.
func TestEventFields(t *testing.T) {
	for _, tc := range eventCases {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := openLog(t, Options{})
			record(t, l, who, tc.ev)
			ls := lines(t, l.opts.Dir)
			if len(ls) != 1 {
				t.Fatalf("the log has %d lines, want 1", len(ls))
			}
			line := ls[0]
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("the line is not JSON: %v\n%s", err, line)
			}
			want := append([]string{"time", "session", "device", "event"}, tc.keys...)
			want = append(want, "prev")
			got := slices.Sorted(func(yield func(string) bool) {
				for k := range m {
					if !yield(k) {
						return
					}
				}
			})
			if !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Errorf("keys = %v, want exactly %v\n%s", got, want, line)
			}
			r, err := ParseLine(line)
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			for _, f := range r.Fields {
				order = append(order, f.Key)
			}
			if !slices.Equal(order, tc.keys) {
				t.Errorf("detail fields in order %v, want %v", order, tc.keys)
			}
			if err := CheckFields(r); err != nil {
				t.Errorf("CheckFields: %v", err)
			}
			if m["time"] != "2026-12-01T10:00:00.000Z" || m["session"] != "desk" || m["device"] != "dev-7f3a" || m["event"] != tc.ev.Name() || m["prev"] != GenesisPrev {
				t.Errorf("time, session, device, event, prev = %v %v %v %v %v", m["time"], m["session"], m["device"], m["event"], m["prev"])
			}
			for k, v := range tc.values {
				if !reflect.DeepEqual(m[k], v) {
					t.Errorf("%s = %#v, want %#v", k, m[k], v)
				}
			}
			if tc.secret != "" && bytes.Contains(line, []byte(tc.secret)) {
				t.Errorf("the line holds the typed text %q:\n%s", tc.secret, line)
			}
			if p, ok := m["preview"].(string); ok && utf8.RuneCountInString(p) > PreviewChars {
				t.Errorf("preview has %d characters, more than %d", utf8.RuneCountInString(p), PreviewChars)
			}
		})
	}
}

// idKeys are the fields masking keeps (A4).
var idKeys = map[string]bool{"requestId": true, "question": true, "revision": true, "turn": true,
	"conversation": true, "space": true, "tab": true, "actionId": true, "starterId": true, "result": true, "steer": true,
	"service": true} // the push service's origin is no one's words

// TestMask checks A4: with content=none every string in the details but
// the ids reads "(masked)", the send preview included, and the fields
// stay the same.
func TestMask(t *testing.T) {
	for _, tc := range eventCases {
		t.Run("A4_"+tc.name, func(t *testing.T) {
			plain, _ := openLog(t, Options{})
			masked, _ := openLog(t, Options{Content: ContentNone})
			record(t, plain, who, tc.ev)
			record(t, masked, who, tc.ev)
			var p, m map[string]any
			json.Unmarshal(lines(t, plain.opts.Dir)[0], &p)
			mline := lines(t, masked.opts.Dir)[0]
			if err := json.Unmarshal(mline, &m); err != nil {
				t.Fatal(err)
			}
			if len(p) != len(m) {
				t.Errorf("masking changed the fields: %d, want %d", len(m), len(p))
			}
			for k, v := range p {
				switch {
				case k == "time" || k == "session" || k == "device" || k == "event" || k == "prev" || idKeys[k]:
					if !reflect.DeepEqual(m[k], v) {
						t.Errorf("%s = %#v masked, want it kept: %#v", k, m[k], v)
					}
				case k == "optionIds":
					for _, id := range m[k].([]any) {
						if id != Masked {
							t.Errorf("optionIds holds %q, want %q", id, Masked)
						}
					}
				default:
					if m[k] != Masked {
						t.Errorf("%s = %#v, want %q", k, m[k], Masked)
					}
				}
			}
			if tc.secret != "" && bytes.Contains(mline, []byte(tc.secret)) {
				t.Errorf("the masked line holds %q", tc.secret)
			}
		})
	}
}

func TestParseContent(t *testing.T) {
	for v, want := range map[string]Content{"": ContentFull, "full": ContentFull, "none": ContentNone} {
		if got, err := ParseContent(v); err != nil || got != want {
			t.Errorf("ParseContent(%q) = %v, %v; want %v", v, got, err, want)
		}
	}
	_, err := ParseContent("None ")
	if err == nil || !strings.Contains(err.Error(), "set it to none") {
		t.Errorf("ParseContent(bad) = %v; want an error that says what to set", err)
	}
}

// TestRecordNeedsResult checks that a tap without a result is refused
// rather than recorded with an empty result.
func TestRecordNeedsResult(t *testing.T) {
	l, _ := openLog(t, Options{})
	_, err := l.Record(who, Answer{RequestID: "r-1", Question: "q", Answered: OptionIDs("yes")})
	if err == nil || !strings.Contains(err.Error(), "audit.OK") {
		t.Errorf("Record(no result) = %v; want an error naming audit.OK", err)
	}
	if _, err := l.Record(who, nil); err == nil {
		t.Error("Record(nil) = nil error")
	}
	if ls := lines(t, l.opts.Dir); len(ls) != 0 {
		t.Errorf("the log has %d lines, want none", len(ls))
	}
	// An event without a result in A3 counts the zero Result as ok.
	record(t, l, who, PaneClose{Conversation: "c-1"})
}

// TestLimits checks that a refused request with huge or hostile values
// still gives one short, whole line that reads back (A5).
func TestLimits(t *testing.T) {
	l, _ := openLog(t, Options{})
	huge := strings.Repeat("\u202e\x1b[2J", 20000)
	ids := make([]string, 1000)
	for i := range ids {
		ids[i] = huge
	}
	record(t, l, Who{Session: huge, Device: huge}, Answer{RequestID: huge, Question: huge, Answered: OptionIDs(ids...), Result: Refused(huge)})
	record(t, l, who, SpaceRename{Space: "s", NewName: huge})
	for i, line := range lines(t, l.opts.Dir) {
		if len(line) > 8<<10 {
			t.Errorf("line %d has %d bytes; every field should be cut", i+1, len(line))
		}
		if bytes.ContainsAny(line, "\x1b\u202e") {
			t.Errorf("line %d holds a raw escape or direction character; they must be written as \\u escapes", i+1)
		}
		r, err := ParseLine(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if ids, _ := r.Get("optionIds").([]string); i == 0 && len(ids) != maxOptionIDs {
			t.Errorf("%d option ids kept, want %d", len(ids), maxOptionIDs)
		}
	}
}

// goldenEvents is the fixed history of the golden logs in testdata.
func goldenEvents() []struct {
	who Who
	ev  Event
} {
	other := Who{Session: "build", Device: "dev-19c2"}
	return []struct {
		who Who
		ev  Event
	}{
		{who, AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-101"}, Conversation: "c-1", Question: "q-1", Revision: 2, OptionIDs: []string{"yes"}}, OK)},
		{who, SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-102"}, Conversation: "c-1", Text: "Please also run the integration tests before you push, and tell me which ones fail.", Steer: true}, OK)},
		{other, AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-103"}, Conversation: "c-9", Question: "q-7", Revision: 1, Text: "use the staging database"}, Refused("stale-revision"))},
		{who, AbortOf(wire.AbortRequest{Header: wire.Header{RequestID: "r-104"}, Conversation: "c-1"}, OK)},
		{other, ActionOf(wire.ActionRequest{Header: wire.Header{RequestID: "r-105"}, Action: "deploy", Conversation: "c-9"}, Failed("the agent is not reachable"))},
		{who, StarterOf(wire.StarterRequest{Header: wire.Header{RequestID: "r-106"}, Starter: "review"}, OK)},
		{who, RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-107"}, Space: "s-1", Title: "Work"}, OK)},
		{who, RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-108"}, Conversation: "c-2", Title: "Release notes"}, OK)},
		{who, RenameOf(wire.RenameRequest{Header: wire.Header{RequestID: "r-109"}, Tab: "t-1", Title: "Logs"}, OK)},
		{who, CloseOf(wire.CloseRequest{Header: wire.Header{RequestID: "r-110"}, Conversation: "c-2"}, OK)},
		{who, ReopenOf(wire.ReopenRequest{Header: wire.Header{RequestID: "r-111"}, Conversation: "c-2"}, OK)},
		{Who{Session: "build"}, AnswerOf(wire.AnswerRequest{Header: wire.Header{RequestID: "r-112"}, Question: "q-8", Revision: 1, OptionIDs: []string{"yes"}}, Refused("unknown-device"))},
	}
}

// writeGolden writes the golden history into dir, a second apart.
func writeGolden(t *testing.T, dir string, content Content) []byte {
	t.Helper()
	l, c := openLog(t, Options{Dir: dir, Content: content})
	for _, g := range goldenEvents() {
		record(t, l, g.who, g.ev)
		c.Add(time.Second + 250*time.Millisecond)
	}
	l.Close()
	data, err := os.ReadFile(filepath.Join(dir, LogName))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestGolden pins the log byte for byte: testdata/audit.log and, masked,
// testdata/audit-masked.log (go test -update rewrites them). The script
// tests of collie audit use copies of them.
func TestGolden(t *testing.T) {
	for _, g := range []struct {
		name, file string
		content    Content
	}{{"A3_golden", "audit.log", ContentFull}, {"A4_golden_masked", "audit-masked.log", ContentNone}} {
		t.Run(g.name, func(t *testing.T) {
			got := writeGolden(t, t.TempDir(), g.content)
			path := filepath.Join("testdata", g.file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v; run go test -update to write it", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the log differs from %s (go test -update rewrites it after a deliberate change):\ngot:\n%s\nwant:\n%s", path, got, want)
			}
			rep, err := VerifyFiles(path)
			if err != nil || !rep.Intact() || rep.Records != len(goldenEvents()) {
				t.Errorf("VerifyFiles(%s) = %+v, %v; want intact with %d records", path, rep, err, len(goldenEvents()))
			}
		})
	}
}
