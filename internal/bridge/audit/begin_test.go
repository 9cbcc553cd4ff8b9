package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestBeginEnd: a forwarded write is noted before it goes to the agent
// (result "pending") and its outcome after, linked by "intent"; a crash
// between the two leaves a write whose outcome is unknown, which Verify
// lists apart from tampering (A5).
func TestBeginEnd(t *testing.T) {
	send := SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-1"}, Conversation: "c-1", Text: "hi"}, Result{})
	t.Run("A5_begin_then_end", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		l, _ := openLog(t, Options{Dir: dir})
		p, err := l.Begin(who, send)
		if err != nil {
			t.Fatal(err)
		}
		ls := lines(t, dir)
		if len(ls) != 1 || !strings.Contains(string(ls[0]), `"result":"pending","prev"`) {
			t.Fatalf("after Begin the log holds %q; want one pending line", ls)
		}
		rc, err := p.End(OK)
		if err != nil || rc.Result != StatusOK {
			t.Fatalf("End = %+v, %v", rc, err)
		}
		if _, err := p.End(OK); err == nil {
			t.Error("a second End succeeded")
		}
		ls = lines(t, dir)
		if len(ls) != 2 || !strings.Contains(string(ls[1]), `"result":"ok","intent":"`+hashLine(ls[0])+`"`) {
			t.Fatalf("after End the log holds %q", ls)
		}
		rep, _ := Verify(dir)
		if !rep.Intact() || rep.Records != 2 || len(rep.Unfinished) != 0 {
			t.Errorf("Verify = %+v; want 2 intact records, nothing unfinished", rep)
		}
		if got, err := l.Receipt(who.Device, "r-1"); err != nil || got.ID != hashLine(ls[1]) {
			t.Errorf("the receipt is %+v, %v; want the outcome's line", got, err)
		}
	})
	t.Run("A5_crash_leaves_outcome_unknown", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		l, _ := openLog(t, Options{Dir: dir})
		if _, err := l.Begin(who, send); err != nil {
			t.Fatal(err)
		}
		record(t, l, who, answer("r-2"))
		l.Close() // the bridge stopped before the agent answered
		rep, _ := Verify(dir)
		if !rep.Intact() || len(rep.Unfinished) != 1 || rep.Unfinished[0].Line != 1 || !strings.Contains(rep.Unfinished[0].What, "outcome unknown: the bridge stopped") {
			t.Errorf("Verify = %+v; want intact, line 1 outcome unknown", rep)
		}
	})
	t.Run("A5_end_of_nothing_detected", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		l, _ := openLog(t, Options{Dir: dir})
		p, _ := l.Begin(who, send)
		p.End(Failed("agent-gone"))
		ls := lines(t, dir)
		// The pending line removed and the chain recomputed: the outcome
		// names a line that is not there.
		rep := verifyBytes(t, "audit.log", joinLines(rechain(ls[1:2])))
		if rep.Intact() || !strings.Contains(rep.Problems[0].What, "ends a write begun at a line the log does not hold") {
			t.Errorf("Verify = %+v", rep.Problems)
		}
	})
}
