package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// anchored opens a log that keeps its anchors, as the journal would.
func anchored(t *testing.T, every int) (*Log, string, func() []Anchor) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	var mu sync.Mutex
	var got []Anchor
	l, _ := openLog(t, Options{Dir: dir, AnchorEvery: every, Anchor: func(a Anchor) {
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
	}})
	return l, dir, func() []Anchor {
		mu.Lock()
		defer mu.Unlock()
		return append([]Anchor(nil), got...)
	}
}

// TestAnchors: the head goes out every AnchorEvery records and at Close;
// checked against those anchors, a log truncated after an anchor, or
// rewritten whole with its hashes recomputed, fails, while records after
// the last anchor are only counted (A1).
func TestAnchors(t *testing.T) {
	l, dir, anchors := anchored(t, 4)
	for i := range 10 {
		record(t, l, who, answer(fmt.Sprintf("r-%d", i)))
	}
	if got := anchors(); len(got) != 2 {
		t.Fatalf("%d anchors after 10 records, want 2 (every 4)", len(got))
	}
	l.Close()
	all := anchors()
	if len(all) != 3 || all[2].Head != l.Head() || all[0].Dir != dir {
		t.Fatalf("anchors %+v; want a third at Close with the head %s, dir %s", all, l.Head(), dir)
	}
	ls := lines(t, dir)
	check := func(t *testing.T, data []byte, anchors []Anchor) Report {
		t.Helper()
		d := filepath.Join(t.TempDir(), "state")
		os.MkdirAll(d, 0o700)
		os.WriteFile(filepath.Join(d, LogName), data, 0o600)
		for i := range anchors {
			anchors[i].Dir = d
		}
		rep, err := Verify(d)
		if err != nil {
			t.Fatal(err)
		}
		rep.CheckAnchors(d, anchors)
		return rep
	}
	t.Run("A1_intact_log_matches", func(t *testing.T) {
		rep := check(t, joinLines(ls), anchors())
		if !rep.Intact() || rep.Anchors.Found != 3 || rep.Anchors.Unanchored != 0 {
			t.Errorf("Verify = %+v, anchors %+v", rep.Problems, rep.Anchors)
		}
	})
	t.Run("A1_truncation_after_anchor_detected", func(t *testing.T) {
		rep := check(t, joinLines(ls[:9]), anchors())
		if rep.Intact() || rep.Problems[0].Line != 0 || !strings.Contains(rep.Problems[0].What, "records were removed from its end") {
			t.Errorf("Verify of a truncated log = %v", rep.Problems)
		}
	})
	t.Run("A1_rewrite_before_last_anchor_detected", func(t *testing.T) {
		edited := append([][]byte(nil), ls...)
		edited[2] = []byte(strings.Replace(string(ls[2]), `"r-2"`, `"r-x"`, 1))
		rep := check(t, joinLines(rechain(edited)), anchors())
		if rep.Intact() || !strings.Contains(rep.Problems[0].What, "3 anchors in the journal name records the log does not hold") {
			t.Errorf("Verify of a rewritten log = %v", rep.Problems)
		}
	})
	t.Run("A1_removed_log_detected", func(t *testing.T) {
		rep := check(t, nil, anchors())
		if rep.Intact() || !strings.Contains(rep.Problems[0].What, "the log was removed or emptied") {
			t.Errorf("Verify of an emptied log = %v", rep.Problems)
		}
	})
	t.Run("A1_records_after_last_anchor_not_covered", func(t *testing.T) {
		// The limit: with only the first two anchors (the daemon was
		// killed before Close), the last two records can go unseen.
		rep := check(t, joinLines(ls[:8]), anchors()[:2])
		if !rep.Intact() || rep.Anchors.Unanchored != 0 {
			t.Errorf("Verify = %v, %+v", rep.Problems, rep.Anchors)
		}
		rep = check(t, joinLines(ls), anchors()[:2])
		if !rep.Intact() || rep.Anchors.Unanchored != 2 {
			t.Errorf("Verify = %v, %+v; want 2 records unanchored", rep.Problems, rep.Anchors)
		}
	})
	t.Run("A1_other_logs_anchors_ignored", func(t *testing.T) {
		rep, _ := Verify(dir)
		other := anchors()
		for i := range other {
			other[i].Dir = "/elsewhere"
		}
		rep.CheckAnchors(dir, other)
		if !rep.Intact() || rep.Anchors.Anchors != 0 {
			t.Errorf("anchors of another folder counted: %+v", rep.Anchors)
		}
	})
}
