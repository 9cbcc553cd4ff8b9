package wire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		req  any    // a write's request or a Request
		want string // "" for valid
	}{
		{"answer_yes", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["yes"]}`, new(AnswerRequest), ""},
		{"answer_always", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["yes"],"always":true,"reason":"ok"}`, new(AnswerRequest), ""},
		{"answer_form", `{"requestId":"r1","conversation":"c","question":"q","revision":3,"values":{"a":"1","b":"2"}}`, new(AnswerRequest), ""},
		{"answer_nothing", `{"requestId":"r1","conversation":"c","question":"q","revision":1}`, new(AnswerRequest), "exactly one of optionIds, text or values"},
		{"answer_always_no", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["no"],"always":true}`, new(AnswerRequest), `"always" goes only with the answer "yes"`},
		{"answer_negative_revision", `{"requestId":"r1","conversation":"c","question":"q","revision":-1,"optionIds":["yes"]}`, new(AnswerRequest), "negative"},
		{"answer_empty_form", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"values":{}}`, new(AnswerRequest), "no values"},
		{"answer_empty_form_value", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"values":{"a":""}}`, new(AnswerRequest), "type at least one character"},
		{"answer_long_reason", `{"requestId":"r1","conversation":"c","question":"q","revision":1,"optionIds":["no"],"reason":"` + strings.Repeat("x", ReasonBytes+1) + `"}`, new(AnswerRequest), "at most 2048 bytes"},
		{"X5_question_with_slash", `{"requestId":"r1","conversation":"c","question":"q/1","revision":1,"optionIds":["yes"]}`, new(AnswerRequest), "not a valid id"},
		{"X4_send_32768_bytes", `{"requestId":"r","conversation":"c","text":"` + strings.Repeat("a", 32768) + `"}`, new(SendRequest), ""},
		{"X4_send_32769_bytes", `{"requestId":"r","conversation":"c","text":"` + strings.Repeat("a", 32769) + `"}`, new(SendRequest), "the limit is 32768"},
		{"X4_send_empty", `{"requestId":"r","conversation":"c","text":""}`, new(SendRequest), "empty"},
		{"send_no_request_id", `{"conversation":"c","text":"hi"}`, new(SendRequest), "requestId"},
		{"abort_question", `{"requestId":"r","conversation":"c","question":"q"}`, new(AbortRequest), ""},
		{"action", `{"requestId":"r","action":"restart"}`, new(ActionRequest), ""},
		{"rename_space", `{"requestId":"r","space":"s","title":"New name"}`, new(RenameRequest), ""},
		{"rename_nothing", `{"requestId":"r","title":"x"}`, new(RenameRequest), "exactly one of space, tab or conversation"},
		{"rename_title_too_long", `{"requestId":"r","tab":"t","title":"` + strings.Repeat("a", 257) + `"}`, new(RenameRequest), "the limit is 256"},
		{"rename_blank_title", `{"requestId":"r","tab":"t","title":"   "}`, new(RenameRequest), "empty"},
		{"close", `{"requestId":"r","conversation":"c"}`, new(CloseRequest), ""},
		{"reopen_missing_conversation", `{"requestId":"r"}`, new(ReopenRequest), "conversation"},
		{"starter", `{"requestId":"r","starter":"tests"}`, new(StarterRequest), ""},
		{"closed_schema", `{"requestId":"r","starter":"tests","shell":"rm -rf ~"}`, new(StarterRequest), "unknown field"},
		{"two_values", `{"requestId":"r","starter":"a"}{"requestId":"r","starter":"b"}`, new(StarterRequest), "data after the JSON value"},
		{"ask_choice", `{"requestId":"r","kind":"choice","title":"Where?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`, new(AskRequest), ""},
		{"ask_choice_repeated_option", `{"requestId":"r","kind":"choice","title":"Where?","options":[{"id":"a","label":"A"},{"id":"a","label":"B"}]}`, new(AskRequest), "used twice"},
		{"ask_form_blank_label", `{"requestId":"r","kind":"form","title":"F","fields":[{"id":"a","label":""}]}`, new(AskRequest), "empty"},
		{"ask_yes_no_with_options", `{"requestId":"r","kind":"yes-no","title":"Q","options":[{"id":"a","label":"A"}]}`, new(AskRequest), "no options or fields"},
		{"ask_wait_too_long", `{"requestId":"r","kind":"line","title":"Q","waitSeconds":51}`, new(AskRequest), "waitSeconds 0 to 50"},
		{"ask_title_with_bidi", `{"requestId":"r","kind":"line","title":"Q\u202eevil"}`, new(AskRequest), "control or invisible"},
		{"revoke_both", `{"grant":"g-1","all":true}`, new(RevokeRequest), "one grant"},
		{"revoke_all", `{"all":true}`, new(RevokeRequest), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeAny(tt.body, tt.req)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("a valid request was refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// decodeAny decodes body into req: a write's request by the registry row
// whose request type it is, any other with DecodeRequest.
func decodeAny(body string, req any) error {
	if r, ok := req.(Request); ok {
		return DecodeRequest(strings.NewReader(body), int64(len(body)), r)
	}
	for _, w := range writes {
		if fmt.Sprintf("%T", w.New()) == fmt.Sprintf("%T", req) {
			return w.Decode(strings.NewReader(body), int64(len(body)), req.(WriteRequest))
		}
	}
	return fmt.Errorf("no write takes a %T", req)
}

func TestDecodeRequestCap(t *testing.T) {
	body := `{"requestId":"r","conversation":"c","text":"` + strings.Repeat("a", WriteCap) + `"}`
	err := writes[1].Decode(strings.NewReader(body), -1, new(SendRequest))
	if !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("a body over 64 KiB: %v", err)
	}
	r := &countingReader{}
	if err := writes[1].Decode(r, WriteCap+1, new(SendRequest)); !errors.Is(err, ErrBodyTooLarge) || r.n != 0 {
		t.Fatalf("a Content-Length over the cap: err %v, read %d bytes; want refused before reading", err, r.n)
	}
}

func TestWritePathsAreC2(t *testing.T) {
	want := "/v1/answer /v1/send /v1/abort /v1/action /v1/rename /v1/close /v1/reopen /v1/starter"
	var paths []string
	for _, w := range Writes() {
		paths = append(paths, w.Path)
	}
	if got := strings.Join(paths, " "); got != want {
		t.Fatalf("C2 writes = %s, want %s", got, want)
	}
}

func TestCleanAlwaysScope(t *testing.T) {
	s, _, err := ParseSnapshot([]byte(`{"spaces":[{"id":"s","title":"S","tabs":[{"id":"t","title":"T","conversations":[{"id":"c","title":"C","questions":[
		{"id":"q","kind":"yes-no","title":"Q","revision":1,"allowAlways":true,"alwaysScope":{"tool":"Ba\u202esh","commandPrefix":"git\nstatus","durationSeconds":-5,"text":"` + strings.Repeat("x", 300) + `"}}]}]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := s.Spaces[0].Tabs[0].Conversations[0].Questions[0].AlwaysScope
	if sc.Tool != "Bash" || sc.CommandPrefix != "gitstatus" || sc.DurationSeconds != 0 || len(sc.Text) > 256 {
		t.Fatalf("X2/X4: scope = %+v", sc)
	}
}
