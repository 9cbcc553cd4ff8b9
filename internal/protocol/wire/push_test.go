package wire

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPushCopy_D4_X4: an agent's push wording is cleaned and cut like a
// title (X2) to its limits, 64 and 256 bytes (X4's style); a copy left
// blank is dropped; the schema stays closed inside it.
func TestPushCopy_D4_X4(t *testing.T) {
	snap := func(push string) []byte {
		return []byte(`{"spaces":[{"id":"s","title":"S","tabs":[{"id":"t","title":"T","conversations":[{"id":"c","title":"C",
			"questions":[{"id":"q","kind":"yes-no","title":"Deploy?","revision":1,` + push + `}]}]}]}]}`)
	}
	long := strings.Repeat("é", 200)
	for _, tc := range []struct {
		name       string
		push       string
		title      string
		body       string
		nilCopy    bool
		refused    bool
		titleBytes int
	}{
		{"D4_as_given", `"push":{"title":"Deploy waits","body":"Release 1.2 to prod"}`, "Deploy waits", "Release 1.2 to prod", false, false, 0},
		{"X2_cleaned", `"push":{"title":"De\u202eploy\u0007 waits\n","body":"a\u200bb\tc"}`, "Deploy waits", "abc", false, false, 0},
		{"X4_cut", `"push":{"title":"` + long + `","body":"` + long + long + `"}`, "", "", false, false, PushTitleBytes},
		{"blank_dropped", `"push":{"title":"\u200b ","body":""}`, "", "", true, false, 0},
		{"absent", `"toolCall":"k"`, "", "", true, false, 0},
		{"closed_schema", `"push":{"title":"x","sound":"loud"}`, "", "", false, true, 0},
		{"exact_case", `"push":{"Title":"x"}`, "", "", false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := ParseSnapshot(snap(tc.push))
			if tc.refused {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			q := s.Spaces[0].Tabs[0].Conversations[0].Questions[0]
			if tc.nilCopy {
				if q.Push != nil {
					t.Fatalf("push %+v, want none", q.Push)
				}
				return
			}
			if q.Push == nil {
				t.Fatal("push dropped")
			}
			if tc.titleBytes > 0 {
				for _, f := range []struct {
					v   string
					max int
				}{{q.Push.Title, PushTitleBytes}, {q.Push.Body, PushBodyBytes}} {
					if len(f.v) > f.max || !utf8.ValidString(f.v) || !strings.HasSuffix(f.v, "…") || len(f.v) < f.max-4 {
						t.Fatalf("cut to %d bytes (%q), want at most %d, ending with …", len(f.v), f.v, f.max)
					}
				}
				return
			}
			if q.Push.Title != tc.title || q.Push.Body != tc.body {
				t.Fatalf("push %+v, want %q / %q", q.Push, tc.title, tc.body)
			}
		})
	}
}

func TestHasExtension(t *testing.T) {
	for _, tc := range []struct {
		h    string
		want bool
	}{{"push", true}, {"wait, push", true}, {" push ,x", true}, {"pushy", false}, {"", false}, {"PUSH", false}} {
		if got := HasExtension(tc.h, ExtPush); got != tc.want {
			t.Errorf("%q: %v", tc.h, got)
		}
	}
}

// FuzzPushCopy: whatever an agent puts in a push's title and body, what
// the bridge keeps is valid UTF-8 within its limit, on one line, with no
// control, invisible or direction character, and cleaning it again
// changes nothing.
func FuzzPushCopy(f *testing.F) {
	f.Add("Release waits", "Ship 1.2?")
	f.Add("a\u202eb\u0000c\n", strings.Repeat("é", 300))
	f.Add("\u200b", "")
	f.Fuzz(func(t *testing.T, title, body string) {
		q := Question{ID: "q", Kind: AskYesNo, Title: "T", Push: &PushCopy{Title: title, Body: body}}
		if reason := cleanQuestion(&q); reason != "" {
			t.Fatalf("dropped: %s", reason)
		}
		if q.Push == nil {
			return
		}
		for _, f := range []struct {
			v   string
			max int
		}{{q.Push.Title, PushTitleBytes}, {q.Push.Body, PushBodyBytes}} {
			if len(f.v) > f.max || !utf8.ValidString(f.v) || strings.ContainsAny(f.v, "\n\t\r\x00\u202e\u200b\ufeff") {
				t.Fatalf("kept %q (limit %d)", f.v, f.max)
			}
		}
		again := Question{ID: "q", Kind: AskYesNo, Title: "T", Push: &PushCopy{Title: q.Push.Title, Body: q.Push.Body}}
		cleanQuestion(&again)
		if again.Push == nil || *again.Push != *q.Push {
			t.Fatalf("cleaning again changed %+v to %+v", q.Push, again.Push)
		}
	})
}
