package device

import (
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type sinkLog struct {
	mu  sync.Mutex
	got []refusal
}

func (s *sinkLog) sink(r refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, r)
}

func (s *sinkLog) lines() []refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]refusal(nil), s.got...)
}

func (s *sinkLog) total() int {
	n := 0
	for _, r := range s.lines() {
		n += r.Count
	}
	return n
}

// TestRefusalsCoalesce: the first refusal of a kind is written at once;
// repeats within the window become one line with their count when it
// closes; a steady flood writes one line a window; another kind, source or
// device is its own; a quiet window ends the kind; close writes what is
// open; no refusal is lost from a count (A1, A5).
func TestRefusalsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s sinkLog
		rs := newRefusals(time.Minute, s.sink)
		page := func(agent string) refusal {
			return refusal{source: "192.0.2.1", Refusal: Refusal{Agent: agent, Write: "answer", Code: "cross-site"}}
		}
		added := 0
		add := func(r refusal) { rs.add(r); added++ }

		add(page("demo"))
		if l := s.lines(); len(l) != 1 || l[0].Count != 1 || l[0].Agent != "demo" {
			t.Fatalf("the first refusal: %+v", l)
		}
		for i := 0; i < 99; i++ {
			add(page("a" + itoa(i)))
		}
		if n := len(s.lines()); n != 1 {
			t.Fatalf("99 repeats wrote %d lines at once", n-1)
		}
		// Other kinds: another code, device, write or source is written at once.
		other := page("demo")
		other.Code = "not-paired"
		add(other)
		other = page("demo")
		other.Device = store.UnknownDevice
		add(other)
		other = page("demo")
		other.source = "192.0.2.2"
		add(other)
		if n := len(s.lines()); n != 4 {
			t.Fatalf("three other kinds: %d lines, want 4", n)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		l := s.lines()
		if len(l) != 5 || l[4].Count != 99 || l[4].Agent != "a0" {
			t.Fatalf("after the window: %+v, want one line counting 99, with the first repeat's fields", l[4:])
		}
		// A steady flood: one line a window.
		for w := 0; w < 3; w++ {
			for i := 0; i < 10; i++ {
				add(page("demo"))
				time.Sleep(time.Second)
			}
			time.Sleep(time.Minute - 10*time.Second)
			synctest.Wait()
		}
		l = s.lines()
		if len(l) != 8 || l[5].Count != 10 || l[6].Count != 10 || l[7].Count != 10 {
			t.Fatalf("a steady flood: %+v", l[5:])
		}
		// A quiet window ends the kind: the next is written at once.
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		add(page("back"))
		if l := s.lines(); len(l) != 9 || l[8].Count != 1 || l[8].Agent != "back" {
			t.Fatalf("after a quiet window: %+v", l[8:])
		}
		// Close writes what is counted; later refusals are written at once.
		add(page("x"))
		add(page("y"))
		rs.close()
		add(page("late"))
		l = s.lines()
		if len(l) != 11 || l[9].Count != 2 || l[10].Count != 1 || l[10].Agent != "late" {
			t.Fatalf("at close: %+v", l[9:])
		}
		if s.total() != added {
			t.Fatalf("the lines count %d refusals, %d were made", s.total(), added)
		}
	})
}

// TestRefusalsBounded: however many sources a flood comes from, the kinds
// counted at once stay bounded; the rest count under "other", and still
// no refusal is lost.
func TestRefusalsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s sinkLog
		rs := newRefusals(time.Minute, s.sink)
		n := maxRefusalKinds + 500
		for i := 0; i < n; i++ {
			rs.add(refusal{source: "src-" + itoa(i), Refusal: Refusal{Write: "send", Code: "cross-site"}})
		}
		rs.mu.Lock()
		kinds := len(rs.open)
		rs.mu.Unlock()
		if kinds > maxRefusalKinds+1 {
			t.Fatalf("%d kinds open", kinds)
		}
		rs.close()
		if s.total() != n {
			t.Fatalf("counted %d of %d", s.total(), n)
		}
	})
}
