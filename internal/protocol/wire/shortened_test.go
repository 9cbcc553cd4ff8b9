package wire

import "testing"

// TestClean_X3_AgentMarkKept: the bridge's cleaning never clears the
// "Text shortened" mark an agent set for text it, or the program that
// asked, cleaned or cut already; it adds its own.
func TestClean_X3_AgentMarkKept(t *testing.T) {
	for _, tc := range []struct {
		name      string
		q         Question
		shortened bool
	}{
		{"agent_marked_clean_text", Question{ID: "q1", Kind: AskYesNo, Title: "Run it?", Shortened: true}, true},
		{"bridge_cleans", Question{ID: "q2", Kind: AskYesNo, Title: "Run \u202eit?"}, true},
		{"clean_unmarked", Question{ID: "q3", Kind: AskYesNo, Title: "Run it?"}, false},
		{"option_label_cleaned", Question{ID: "q4", Kind: AskChoice, Title: "Which?", Options: []Option{{ID: "a", Label: "Keep \u202eall"}, {ID: "b", Label: "Drop"}}}, true},
		{"field_label_cleaned", Question{ID: "q5", Kind: AskForm, Title: "Who?", Fields: []Field{{ID: "n", Label: "Na\u200bme"}}}, true},
		{"labels_clean", Question{ID: "q6", Kind: AskChoice, Title: "Which?", Options: []Option{{ID: "a", Label: "Keep"}, {ID: "b", Label: "Drop"}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			if reason := cleanQuestion(&q); reason != "" {
				t.Fatal(reason)
			}
			if q.Shortened != tc.shortened {
				t.Fatalf("shortened = %v, want %v", q.Shortened, tc.shortened)
			}
		})
	}
}

// TestAskRequest_WithoutExtensions: an agent from before the shortened
// and detail fields refuses them as unknown, or a detail's body as over
// its cap; only those refusals make the asker ask again without them.
func TestAskRequest_WithoutExtensions(t *testing.T) {
	r := AskRequest{RequestID: "a", Kind: AskYesNo, Title: "T", Shortened: true}
	if a, ok := r.WithoutExtensions(CodeBadRequest, `the request body is not valid: unknown field "shortened" in the top-level object (names are case-sensitive)`); !ok || a.Shortened {
		t.Fatalf("the old agent's refusal: %v %+v", ok, a)
	}
	d := AskRequest{RequestID: "a", Kind: AskYesNo, Title: "T", Detail: "the whole command"}
	for _, tc := range []struct {
		r         AskRequest
		code, msg string
		again     bool
	}{
		{d, CodeBadRequest, `unknown field "detail" in the top-level object`, true},
		{d, CodeBodyTooLarge, `the cap is 65536 bytes; send less`, true},
		{r, CodeBadRequest, `unknown field "shortenedX"`, false},
		{r, CodeClosed, `"shortened"`, false},
		{AskRequest{RequestID: "a"}, CodeBodyTooLarge, `the cap is 65536 bytes`, false},
	} {
		a, ok := tc.r.WithoutExtensions(tc.code, tc.msg)
		if ok != tc.again || ok && (a.Shortened || a.Detail != "") {
			t.Errorf("%s %s: asked again %v, want %v (%+v)", tc.code, tc.msg, ok, tc.again, a)
		}
	}
}
