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

// TestAskRequest_WithoutShortened: an agent from before the field refuses
// it as unknown; only that refusal makes the asker ask again without it.
func TestAskRequest_WithoutShortened(t *testing.T) {
	r := AskRequest{RequestID: "a", Kind: AskYesNo, Title: "T", Shortened: true}
	if a, ok := r.WithoutShortened(CodeBadRequest, `the request body is not valid: unknown field "shortened" in the top-level object (names are case-sensitive)`); !ok || a.Shortened {
		t.Fatalf("the old agent's refusal: %v %+v", ok, a)
	}
	for _, tc := range []struct{ code, msg string }{
		{CodeBadRequest, `unknown field "shortenedX"`},
		{CodeClosed, `"shortened"`},
	} {
		if _, ok := r.WithoutShortened(tc.code, tc.msg); ok {
			t.Errorf("asked again after %s %s", tc.code, tc.msg)
		}
	}
}
