package guard

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a fake clock the tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

var t0 = time.Date(2026, 12, 2, 18, 0, 0, 0, time.UTC)

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(d time.Duration) {
	c.mu.Lock()
	c.t = t0.Add(d)
	c.mu.Unlock()
}

func open(t *testing.T, c *clock, path string) *Guard {
	t.Helper()
	g, err := Open(Options{Path: path, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// ask is one question in a table: at offset at, in conversation conv,
// with key key (a fresh key when ""); want is the outcome, reason the
// reason of a Held, waiting the N of a Summary.
type ask struct {
	at      time.Duration
	conv    string
	key     string
	want    Outcome
	reason  string
	waiting int
	test    bool // a test push (collie push test) rather than a question
}

// burst is n questions at at, each in a conversation of its own (named
// prefix0, prefix1, …), all with outcome want.
func burst(at time.Duration, prefix string, n int, want Outcome, reason string) []ask {
	out := make([]ask, n)
	for i := range out {
		out[i] = ask{at: at, conv: fmt.Sprintf("%s%d", prefix, i), want: want, reason: reason}
	}
	return out
}

func seq(parts ...[]ask) []ask {
	var out []ask
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// thirty is 30 pushes in the first three minutes: ten a minute, each in a
// conversation of its own.
func thirty() []ask {
	return seq(burst(0, "a", 10, Push, ""), burst(time.Minute, "b", 10, Push, ""), burst(2*time.Minute, "c", 10, Push, ""))
}

// TestGuardLimits_D9 is D9's table, every limit at its edge, on a fake
// clock.
func TestGuardLimits_D9(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		name string
		asks []ask
	}{
		{"D9_three_a_minute_per_conversation", []ask{
			{at: 0, conv: "c", want: Push}, {at: 10 * time.Second, conv: "c", want: Push}, {at: 20 * time.Second, conv: "c", want: Push},
			{at: 30 * time.Second, conv: "c", want: Held, reason: ReasonConversation},
			{at: 30 * time.Second, conv: "other", want: Push}, // another conversation is not held
			{at: time.Minute - ms, conv: "c", want: Held, reason: ReasonConversation},
			{at: time.Minute, conv: "c", want: Push}, // the first left the window exactly a minute later
			{at: time.Minute + 10*time.Second - ms, conv: "c", want: Held, reason: ReasonConversation},
			{at: time.Minute + 10*time.Second, conv: "c", want: Push},
		}},
		{"D9_ten_a_minute_per_host", seq(
			burst(0, "x", 10, Push, ""),
			burst(0, "y", 1, Held, ReasonHostMinute),
			burst(time.Minute-ms, "z", 1, Held, ReasonHostMinute),
			burst(time.Minute, "w", 10, Push, ""),
			burst(time.Minute, "v", 1, Held, ReasonHostMinute),
		)},
		{"D9_host_minute_slides", seq(
			burst(0, "x", 5, Push, ""),
			burst(30*time.Second, "y", 5, Push, ""),
			burst(59*time.Second, "z", 1, Held, ReasonHostMinute),
			burst(time.Minute, "w", 5, Push, ""), // the five at 0 left
			burst(time.Minute, "v", 1, Held, ReasonHostMinute),
		)},
		{"D9_the_31st_is_one_summary_then_an_hour_of_silence", seq(
			thirty(),
			burst(2*time.Minute, "held", 3, Held, ReasonHostMinute),
			[]ask{{at: 3 * time.Minute, conv: "d0", want: Summary, waiting: 4}}, // 3 held before it, and itself
			burst(3*time.Minute, "e", 3, Held, ReasonSilent),
			burst(time.Hour+3*time.Minute-ms, "f", 2, Held, ReasonSilent),
			burst(time.Hour+3*time.Minute, "g", 10, Push, ""), // the silent hour ended; the 31 left the window
			burst(time.Hour+3*time.Minute, "h", 1, Held, ReasonHostMinute),
		)},
		{"D9_summary_counts_only_the_hour_before_it", seq(
			[]ask{{at: 0, conv: "c", want: Push}, {at: 0, conv: "c", want: Push}, {at: 0, conv: "c", want: Push}},
			[]ask{{at: 0, conv: "c", want: Held, reason: ReasonConversation}, {at: 0, conv: "c", want: Held, reason: ReasonConversation}},
			burst(30*time.Minute, "a", 10, Push, ""),
			burst(40*time.Minute, "b", 10, Push, ""),
			burst(40*time.Minute, "x", 2, Held, ReasonHostMinute),
			burst(50*time.Minute, "d", 7, Push, ""), // 30 in the hour
			// An hour and a minute on, the 3 pushes and 2 held at 0 left.
			burst(time.Hour+time.Minute, "g", 3, Push, ""), // 30 in the hour again
			[]ask{{at: time.Hour + time.Minute, conv: "f", want: Summary, waiting: 3}},
		)},
		{"D9_hour_window_slides_without_a_summary", seq(
			thirty(),
			burst(time.Hour, "late", 10, Push, ""), // the ten at 0 left the hour exactly now
		)},
		{"D9_held_by_a_minute_limit_is_never_pushed_later", []ask{
			{at: 0, conv: "c", key: "k1", want: Push}, {at: 0, conv: "c", key: "k2", want: Push}, {at: 0, conv: "c", key: "k3", want: Push},
			{at: 0, conv: "c", key: "k4", want: Held, reason: ReasonConversation},
			{at: 2 * time.Minute, conv: "c", key: "k4", want: Repeat}, // the limit is gone, the decision stays
			{at: 2 * time.Minute, conv: "c", key: "k5", want: Push},
		}},
		{"D9_decided_once_keyed_by_agent_and_tool_call", []ask{
			{at: 0, conv: "c", key: "agent\x00tool-1", want: Push},
			{at: time.Second, conv: "c", key: "agent\x00tool-1", want: Repeat},
			{at: time.Hour * 5, conv: "other", key: "agent\x00tool-1", want: Repeat},
			{at: time.Hour * 5, conv: "c", key: "agent2\x00tool-1", want: Push}, // another agent's call
		}},
		{"D9_a_repeat_counts_nothing", []ask{
			{at: 0, conv: "c", key: "k", want: Push},
			{at: 0, conv: "c", key: "k", want: Repeat}, {at: 0, conv: "c", key: "k", want: Repeat}, {at: 0, conv: "c", key: "k", want: Repeat},
			{at: 0, conv: "c", want: Push}, {at: 0, conv: "c", want: Push},
		}},
		{"D9_a_test_push_counts_apart_from_questions", seq(
			burst(0, "a", 10, Push, ""), // the host's minute is full of questions
			// A test is not held back by the questions' limits...
			[]ask{{at: 0, test: true, want: Push}, {at: 0, test: true, want: Push}, {at: 0, test: true, want: Push}},
			// ...but by its own: three a minute.
			[]ask{{at: 0, test: true, want: Held, reason: ReasonTests}},
			[]ask{{at: time.Minute, test: true, want: Push}}, // the three left the minute
			// Four tests held back no question.
			burst(time.Minute, "b", 10, Push, ""),
			burst(2*time.Minute, "d", 10, Push, ""),
			[]ask{{at: 3 * time.Minute, conv: "e", want: Summary, waiting: 1}},         // no test among the 30
			[]ask{{at: 4 * time.Minute, test: true, want: Held, reason: ReasonSilent}}, // the silent hour holds it
		)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			g := open(t, c, "")
			run(t, c, g, tc.asks)
		})
	}
}

var fresh int

func run(t *testing.T, c *clock, g *Guard, asks []ask) {
	t.Helper()
	for i, a := range asks {
		c.set(a.at)
		var d Decision
		if a.test {
			d = g.Test()
		} else {
			key := a.key
			if key == "" {
				fresh++
				key = fmt.Sprintf("fresh-%d", fresh)
			}
			d = g.Decide(key, a.conv)
		}
		if d.Outcome != a.want || d.Reason != a.reason || (a.waiting != 0 && d.Waiting != a.waiting) {
			t.Fatalf("ask %d (at %v, conversation %q): %+v, want %v %q waiting %d", i, a.at, a.conv, d, a.want, a.reason, a.waiting)
		}
		if d.Outcome == Summary && !d.Until.Equal(c.Now().Add(Silence)) {
			t.Fatalf("ask %d: summary's silence ends %v, want an hour later", i, d.Until)
		}
	}
}

// TestGuardCounters_D9: every decision is counted once, as collie doctor
// and the journal show them.
func TestGuardCounters_D9(t *testing.T) {
	c := newClock()
	g := open(t, c, "")
	run(t, c, g, seq(thirty(), burst(2*time.Minute, "h", 4, Held, ReasonHostMinute),
		[]ask{{at: 3 * time.Minute, conv: "s", want: Summary, waiting: 5}}, burst(4*time.Minute, "q", 2, Held, ReasonSilent)))
	st := g.Status()
	want := Counters{Sent: 30, Held: 6, Summaries: 1}
	if st.Counters != want || st.HoldingBack != ReasonSilent || !st.Until.Equal(t0.Add(3*time.Minute+Silence)) || st.SentLastHour != 31 {
		t.Fatalf("status %+v, want counters %+v, silent until an hour after the summary, 31 in the hour", st, want)
	}
}

// TestGuardProperties_D9 drives the guard with random questions (bursts,
// lulls, repeated keys, a few conversations or many) over several hours
// and checks D9 against the log of its decisions, recounted here:
//   - no 60 s window holds more than 3 pushes of one conversation, or more
//     than 10 of the host; no hour more than 31 (30 and the summary);
//   - after a summary, no push for an hour;
//   - each key is decided once: its first decision is never Repeat, every
//     later one is;
//   - a question is held back only when a limit was really full, and
//     pushed whenever none was (the guard is exact, not just safe);
//   - a summary comes exactly when 30 were sent in the hour before it.
func TestGuardProperties_D9(t *testing.T) {
	var allSummaries, allHeld int
	defer func() {
		if allSummaries == 0 || allHeld == 0 {
			t.Errorf("the random runs made %d summaries and held %d: they test nothing of the hour", allSummaries, allHeld)
		}
	}()
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed_", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 12))
			c := newClock()
			g := open(t, c, "")
			convs := 1 + r.IntN(40)
			keys := 50 + r.IntN(2000)
			type sent struct {
				at   time.Duration
				conv string
			}
			var pushes []sent // pushes and summaries, in order
			var summaries []time.Duration
			decided := map[string]bool{}
			var now time.Duration
			for range 3000 {
				switch r.IntN(10) {
				case 0:
					now += time.Duration(r.IntN(20)) * time.Minute
				case 1, 2:
					now += time.Duration(r.IntN(61)) * time.Second
				default:
					now += time.Duration(r.IntN(3000)) * time.Millisecond
				}
				c.set(now)
				conv := fmt.Sprint("c", r.IntN(convs))
				key := fmt.Sprint("k", r.IntN(keys))
				d := g.Decide(key, conv)
				if decided[key] != (d.Outcome == Repeat) {
					t.Fatalf("key %s at %v: %v, decided before: %v", key, now, d.Outcome, decided[key])
				}
				decided[key] = true
				if d.Outcome == Repeat {
					continue
				}
				inWindow := func(w time.Duration, conv string) int {
					n := 0
					for i := len(pushes) - 1; i >= 0 && pushes[i].at > now-w; i-- {
						if conv == "" || pushes[i].conv == conv {
							n++
						}
					}
					return n
				}
				silent := len(summaries) > 0 && now < summaries[len(summaries)-1]+Silence
				full := silent || inWindow(time.Minute, conv) >= PerConversation || inWindow(time.Minute, "") >= PerHostMinute
				switch {
				case full && d.Outcome != Held:
					t.Fatalf("at %v in %s: %+v, but a limit was full", now, conv, d)
				case !full && d.Outcome == Held:
					t.Fatalf("at %v in %s: held (%s), but no limit was full", now, conv, d.Reason)
				case !full && (inWindow(time.Hour, "") >= PerHostHour) != (d.Outcome == Summary):
					t.Fatalf("at %v: %v with %d pushes in the hour", now, d.Outcome, inWindow(time.Hour, ""))
				}
				if d.Outcome == Held {
					continue
				}
				pushes = append(pushes, sent{now, conv})
				if d.Outcome == Summary {
					summaries = append(summaries, now)
				}
				if n := inWindow(time.Hour, ""); n > PerHostHour+1 {
					t.Fatalf("at %v: %d pushes in an hour", now, n)
				}
			}
			st := g.Status()
			allSummaries += len(summaries)
			allHeld += int(st.Held)
			if int(st.Sent+st.Summaries) != len(pushes) || int(st.Summaries) != len(summaries) {
				t.Fatalf("counters %+v, recounted %d pushes and %d summaries", st.Counters, len(pushes), len(summaries))
			}
		})
	}
}

// TestGuardRestart_D9: the counts survive a restart, so a crash loop
// cannot reset them; the file is 0600 and holds no agent text.
func TestGuardRestart_D9(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", FileName)

	t.Run("D9_crash_loop_keeps_the_hour", func(t *testing.T) {
		c := newClock()
		var pushes, summaries, held int
		// The daemon starts, one question comes, it saves, it crashes: 40
		// times in four minutes.
		for i := range 40 {
			c.set(time.Duration(i) * 6 * time.Second)
			g := open(t, c, path)
			d := g.Decide(fmt.Sprintf("zebra-agent\x00quokka-call-%d", i), fmt.Sprint("wombat-", i))
			switch d.Outcome {
			case Push:
				pushes++
			case Summary:
				summaries++
			case Held:
				held++
			}
			if err := g.Save(); err != nil {
				t.Fatal(err)
			}
		}
		// 10 a minute come and go out for three minutes; the 31st is the
		// summary, then silence.
		if pushes != 30 || summaries != 1 || held != 9 {
			t.Fatalf("%d pushes, %d summaries, %d held across 40 restarts; want 30, 1 and 9", pushes, summaries, held)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s has mode %04o, want 0600", path, fi.Mode().Perm())
		}
		data, _ := os.ReadFile(path)
		for _, s := range []string{"zebra", "quokka", "wombat"} {
			if containsFold(string(data), s) {
				t.Fatalf("the state file holds agent text %q: %s", s, data)
			}
		}
		// Still silent after one more restart, until the hour ends.
		c.set(time.Hour)
		g := open(t, c, path)
		if d := g.Decide("after", "x"); d.Outcome != Held || d.Reason != ReasonSilent {
			t.Fatalf("after a restart in the silent hour: %+v", d)
		}
		if st := g.Status(); st.HoldingBack != ReasonSilent {
			t.Fatalf("status after restart: %+v", st)
		}
	})

	t.Run("D9_decided_keys_survive", func(t *testing.T) {
		c := newClock()
		p := filepath.Join(dir, "keys.json")
		g := open(t, c, p)
		for i := range 5 {
			g.Decide(fmt.Sprint("key-", i), "c")
		}
		if err := g.Save(); err != nil {
			t.Fatal(err)
		}
		c.set(10 * time.Hour)
		g = open(t, c, p)
		for i := range 5 {
			if d := g.Decide(fmt.Sprint("key-", i), "c"); d.Outcome != Repeat {
				t.Fatalf("key-%d after a restart: %v, want repeat", i, d.Outcome)
			}
		}
		if d := g.Decide("key-new", "c"); d.Outcome != Push {
			t.Fatalf("a new key after the restart: %v", d.Outcome)
		}
	})

	t.Run("D9_minute_windows_survive", func(t *testing.T) {
		c := newClock()
		p := filepath.Join(dir, "minute.json")
		g := open(t, c, p)
		for range 3 {
			g.Decide(fmt.Sprint(rand.Int()), "c")
		}
		g.Save()
		c.set(30 * time.Second)
		g = open(t, c, p)
		if d := g.Decide("one-more", "c"); d.Reason != ReasonConversation {
			t.Fatalf("after a restart 30 s later: %+v, want held by the conversation's limit", d)
		}
	})

	t.Run("D9_unreadable_file_fails_closed", func(t *testing.T) {
		c := newClock()
		p := filepath.Join(dir, "bad.json")
		os.WriteFile(p, []byte(`{"version":1,"sent":"nope"}`), 0o600)
		g, err := Open(Options{Path: p, Now: c.Now})
		if err == nil {
			t.Fatal("a broken file opened without an error")
		}
		// The reason names the file and the fix, never a summary push
		// that was not sent; so does doctor's row (Status), and a test.
		why := ReasonUnreadable(p)
		if !strings.Contains(why, p) || !strings.Contains(why, "rm "+p) {
			t.Fatalf("the reason does not name the file and the fix: %s", why)
		}
		if d := g.Decide("k", "c"); d.Outcome != Held || d.Reason != why || !d.Until.Equal(t0.Add(Silence)) {
			t.Fatalf("after a broken file: %+v, want silent for an hour because of the file", d)
		}
		if d := g.Test(); d.Outcome != Held || d.Reason != why {
			t.Fatalf("a test after a broken file: %+v", d)
		}
		if st := g.Status(); st.HoldingBack != why || !st.Until.Equal(t0.Add(Silence)) {
			t.Fatalf("status after a broken file: %+v", st)
		}
		if err := g.Save(); err != nil {
			t.Fatal(err)
		}
		// A restart within the hour still says why, from the file.
		c.set(30 * time.Minute)
		again := open(t, c, p)
		if st := again.Status(); st.HoldingBack != why {
			t.Fatalf("after a restart: %+v", st)
		}
		c.set(time.Hour)
		if _, err := Open(Options{Path: p, Now: c.Now}); err != nil {
			t.Fatalf("the rewritten file: %v", err)
		}
	})

	t.Run("D9_clock_stepped_back", func(t *testing.T) {
		c := newClock()
		p := filepath.Join(dir, "back.json")
		c.set(time.Hour)
		g := open(t, c, p)
		for i := range 30 {
			c.set(time.Hour + time.Duration(i/10)*time.Minute)
			g.Decide(fmt.Sprint("b", i), fmt.Sprint("c", i))
		}
		g.Save()
		c.set(0) // an hour back: the counts stay as they were
		g = open(t, c, p)
		if d := g.Decide("b-next", "new"); d.Outcome != Held || d.Reason != ReasonHostMinute {
			t.Fatalf("after the clock stepped back: %+v", d)
		}
	})
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if equalFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// TestGuardDecidedOnceConcurrent_D9: polls that see the same questions at
// once (a held read and collie durable list's Check, say) decide each key
// once: of 32 goroutines deciding the same 500 keys, exactly one decision
// per key is not a Repeat.
func TestGuardDecidedOnceConcurrent_D9(t *testing.T) {
	c := newClock()
	g := open(t, c, filepath.Join(t.TempDir(), FileName))
	const keys, polls = 500, 32
	var mu sync.Mutex
	firsts := map[string]int{}
	var wg sync.WaitGroup
	for p := range polls {
		wg.Go(func() {
			for i := range keys {
				k := fmt.Sprint("agent\x00q-", (i+p*7)%keys)
				if d := g.Decide(k, fmt.Sprint("conv-", i%50)); d.Outcome != Repeat {
					mu.Lock()
					firsts[k]++
					mu.Unlock()
				}
				if i%100 == 0 {
					g.Save()
				}
			}
		})
	}
	wg.Wait()
	if len(firsts) != keys {
		t.Fatalf("%d keys decided, want %d", len(firsts), keys)
	}
	for k, n := range firsts {
		if n != 1 {
			t.Fatalf("key %q decided %d times", k, n)
		}
	}
	st := g.Status()
	if st.Sent != PerHostMinute || st.Held != keys-PerHostMinute {
		t.Fatalf("counters %+v, want %d sent and the rest held", st.Counters, PerHostMinute)
	}
}

// TestGuardForgetsOldestKeys_D9: the guard remembers the newest
// MemoryKeys keys, across a restart too.
func TestGuardForgetsOldestKeys_D9(t *testing.T) {
	c := newClock()
	p := filepath.Join(t.TempDir(), FileName)
	g := open(t, c, p)
	for i := range MemoryKeys + 10 {
		g.Decide(fmt.Sprint("k", i), "c")
	}
	g.Save()
	g = open(t, c, p)
	if d := g.Decide("k5", "c"); d.Outcome == Repeat {
		t.Fatal("the 6th oldest key is still remembered")
	}
	if d := g.Decide(fmt.Sprint("k", MemoryKeys+9), "c"); d.Outcome != Repeat {
		t.Fatal("the newest key was forgotten")
	}
}
