package loginapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestAsk_X3_ShortenedOnRealBoard: an agent session's question, on the
// real hosted board and read as the bridge reads it: a rationale with an
// escape, a direction override and a zero-width space is cleaned and the
// card marked "Text shortened"; so is one collie ask cleaned or cut before
// sending it (shortened in the request, 100 KB shown head and tail).
func TestAsk_X3_ShortenedOnRealBoard(t *testing.T) {
	tail := "echo hidden-tail >> MARK"
	excerpt := "echo filler-line\n[… 101976 bytes not shown …]\n" + tail
	for _, tc := range []struct {
		name string
		req  wire.AskRequest
	}{
		{"hostile_rationale", wire.AskRequest{Rationale: "Because \x1b]0;owned\x07 the \u2066build\u2069 is green\u200b.\n" + tail}},
		{"asker_shortened", wire.AskRequest{Rationale: excerpt, Shortened: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			shown := make(chan upstream.Waiter, 1)
			host := loginhost.New(loginhost.Options{Attach: func(name string, c upstream.Waiter) error {
				shown <- c
				return nil
			}, Live: r.store.WatchAgent})
			defer host.Close()
			r.api.o.Boards = host
			_, sess := r.login(verifier)
			bearer := map[string]string{"Authorization": "Bearer " + sess["access_token"].(string)}
			req := tc.req
			req.RequestID, req.Kind, req.Title, req.WaitSeconds = "r-"+tc.name, wire.AskYesNo, "Deploy?", 1
			body, _ := json.Marshal(req)
			go r.do("POST", loginwire.AskPath, string(body), bearer)
			// The request waits a second and gets "pending"; the card stays.
			board := <-shown
			var q wire.Question
			deadline := time.Now().Add(10 * time.Second)
			for etag := ""; q.ID == ""; {
				if time.Now().After(deadline) {
					t.Fatal("no question on the board within 10 s")
				}
				rd, err := board.SnapshotWait(context.Background(), etag, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if rd.Snapshot != nil {
					for _, cv := range rd.Snapshot.Spaces[0].Tabs[0].Conversations {
						for _, qq := range cv.Questions {
							q = qq
						}
					}
				}
				etag = rd.ETag
			}
			if !q.Shortened || !strings.HasSuffix(q.Rationale, tail) || strings.ContainsAny(q.Rationale, "\x1b\x07\u2066\u2069\u200b") {
				t.Fatalf("X3: shortened %v, rationale %q", q.Shortened, q.Rationale)
			}
		})
	}
}
