package board

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/agent/durable/durabletest"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// hostile holds what X2 removes: an escape sequence, a direction override
// and a zero-width space.
const hostile = "rm -rf \x1b[8mhidden\x1b[0m \u202eevil\u202c zero\u200bwidth"

// TestAsk_X3_ShortenedKept: the board cleans an asked question's title and
// rationale, and the card still says "Text shortened" whenever that
// cleaning, or the asker's own, changed anything. The bridge sees only the
// cleaned text, so the board's flag is the only one left.
func TestAsk_X3_ShortenedKept(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	for _, tc := range []struct {
		name      string
		req       wire.AskRequest
		shortened bool
	}{
		{"hostile_rationale", wire.AskRequest{Rationale: hostile}, true},
		{"long_rationale_cut", wire.AskRequest{Rationale: strings.Repeat("x", 3000)}, true},
		{"asker_cleaned_it", wire.AskRequest{Rationale: "the head\n[… 98000 bytes not shown …]\nthe tail", Shortened: true}, true},
		{"clean", wire.AskRequest{Rationale: "CI passed."}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			req.RequestID, req.Kind, req.Title = "rq-"+tc.name, wire.AskYesNo, "Question "+tc.name
			// Straight to the board, past the request checks: a long
			// rationale is cut rather than refused there.
			askRaw(t, r, req)
			q := shownQuestion(t, r, req.Title)
			if q.Shortened != tc.shortened {
				t.Fatalf("shortened = %v, want %v (rationale %q)", q.Shortened, tc.shortened, q.Rationale)
			}
			if strings.ContainsAny(q.Rationale, "\x1b\u202e\u200b") {
				t.Fatalf("the rationale was not cleaned: %q", q.Rationale)
			}
		})
	}
	t.Run("reworded_hostile", func(t *testing.T) {
		// D9: the same tool call asked again with new wording: the new
		// wording is cleaned and marked like the first.
		first := wire.AskRequest{RequestID: "rw1", Kind: wire.AskYesNo, Title: "Run the script?", ToolCall: "tc-rw"}
		askRaw(t, r, first)
		if q := shownQuestion(t, r, first.Title); q.Shortened {
			t.Fatalf("a clean question is marked: %+v", q)
		}
		again := first
		again.RequestID, again.Rationale = "rw2", hostile
		askRaw(t, r, again)
		if q := shownQuestion(t, r, first.Title); !q.Shortened || q.Revision != 2 {
			t.Fatalf("the reworded question lost its mark: %+v", q)
		}
	})
}

// askRaw asks req of the board and lets it wait 1 ms.
func askRaw(t *testing.T, r *rig, req wire.AskRequest) {
	t.Helper()
	if _, err := r.board.Ask(context.Background(), &req, time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// shownQuestion is the open question titled title, as the bridge shows it.
func shownQuestion(t *testing.T, r *rig, title string) wire.Question {
	t.Helper()
	r.WaitQuestion(t, title)
	for _, cv := range r.Snapshot(t).Spaces[0].Tabs[0].Conversations {
		for _, q := range cv.Questions {
			if q.Title == title {
				return q
			}
		}
	}
	t.Fatalf("no question %q", title)
	return wire.Question{}
}

// TestAsk_X3_DetailOnlyToABridgeThatTakesIt: a question's detail, the whole
// text a yes would run, is in the snapshot for a read that announces the
// extension, cleaned and cut to its cap, and left out for one that does
// not (a bridge from before it refuses an unknown field). A detail past
// the board's budget is left out and the card marked shortened.
func TestAsk_X3_DetailOnlyToABridgeThatTakesIt(t *testing.T) {
	r := newRig(t, durable.Transport{Check: &durabletest.AllowAll{}}, Options{})
	whole := strings.Repeat("echo filler-line\n", 6000) + "echo \u202ehidden-tail >> MARK"
	askRaw(t, r, wire.AskRequest{RequestID: "d1", Kind: wire.AskYesNo, Title: "Run it?", Rationale: "head … tail", Shortened: true, Detail: whole})
	read := func(ext string) string {
		req, _ := http.NewRequest("GET", "http://agent"+wire.SnapshotPath, nil)
		req.Header.Set(wire.VersionHeader, "1")
		if ext != "" {
			req.Header.Set(wire.ExtensionsHeader, ext)
		}
		resp, err := r.HC.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := read("push"); strings.Contains(body, `"detail"`) {
		t.Fatalf("a read without the extension got a detail (%d bytes)", len(body))
	}
	s, _, err := wire.ParseSnapshot([]byte(read("push, " + wire.ExtDetail)))
	if err != nil {
		t.Fatal(err)
	}
	q := durabletest.FindConv(s, "main").Questions[0]
	if q.Detail != strings.ReplaceAll(whole, "\u202e", "") || !q.Shortened {
		t.Fatalf("detail %d bytes (want %d, cleaned), shortened %v", len(q.Detail), len(whole)-3, q.Shortened)
	}
	t.Run("over_the_budget", func(t *testing.T) {
		big := strings.Repeat("x", wire.DetailBytes)
		for i := range detailBudget / wire.DetailBytes {
			askRaw(t, r, wire.AskRequest{RequestID: fmt.Sprintf("big%d", i), Kind: wire.AskYesNo, Title: fmt.Sprintf("Big %d?", i), Detail: big})
		}
		s, _, err := wire.ParseSnapshot([]byte(read(wire.ExtDetail)))
		if err != nil {
			t.Fatal(err)
		}
		qs := durabletest.FindConv(s, "main").Questions
		for i, q := range qs {
			kept := i < len(qs)-1 // the first question's and all but the last big one's fit
			if (q.Detail != "") != kept || !q.Shortened && !kept {
				t.Errorf("%s: detail %d bytes, shortened %v; want it kept %v", q.Title, len(q.Detail), q.Shortened, kept)
			}
		}
	})
}
