// Package guard is the push guard of D9: it decides, once, whether a new
// question is pushed, and keeps the counts that make the limits hold
// across daemon restarts.
//
// The rules, exactly:
//
//   - Each question is decided once, keyed by (durable agent, tool call),
//     or (durable agent, conversation, question id) for a question without
//     a tool call. A key decided before is never decided again, pushed or
//     not ([Repeat]). The guard remembers the newest [MemoryKeys] keys,
//     across restarts; a key older than those may be decided again.
//   - At most [PerConversation] pushes in any 60 s per conversation,
//     [PerHostMinute] in any 60 s per host and [PerHostHour] in any hour per
//     host. The windows slide: a push is allowed when fewer than the limit
//     were sent in the 60 s (or hour) before it, the question's own instant
//     included. "Per host" is this bridge's machine: one daemon, one user,
//     every agent it reads and every provider it sends through together
//     (a phone and a desktop that both get a push count it once).
//   - What the limits count is pushes delivered: a question's push or the
//     summary that at least one provider took for at least one destination
//     (the ntfy server answered 2xx, the desktop's notification server
//     took it, a push service took it for at least one subscribed
//     browser). A push is counted when it is decided, so the limits hold
//     while it is on its way, and uncounted ([Guard.Undelivered]) when
//     every provider failed all its tries or had nowhere to send it. A
//     question held back is not a push and counts nothing.
//   - A test push (collie push test) is not a question: it counts nothing
//     against these limits and is held back only in the silent hour and
//     by its own limit, [TestsPerMinute] test pushes delivered in any 60 s
//     (kept in memory only).
//   - A question held back by a per-minute limit is never pushed later: it
//     was decided ([Held]). Its card is on every device all the same; the
//     guard only decides about the push.
//   - A question that passes both per-minute limits while 30 pushes were
//     sent in the hour before it would be the 31st: it becomes one summary
//     push ([Summary], "N more questions are waiting", N counting it and
//     every question held back in the hour before it), and the host sends
//     no push for an hour from that instant ([Silent]). Questions in the
//     silent hour are decided and held back; a test push too. When the
//     hour ends, the windows hold only pushes older than the hour, so
//     pushes start again.
//
// The guard never hides a card: deciding touches nothing of the snapshot,
// and a held question is shown on devices as any other.
//
// The guard takes a clock ([Options.Now]) so its tests are exact. Its
// counts (the pushes sent in the last hour, per conversation in the last
// minute, the questions held back in the last hour, the end of a silent
// hour, the decided keys) live in the state folder, push-guard.json, mode
// 0600, written whole by internal/linux/atomicfile ([Guard.Save]); keys and
// conversations are kept only as truncated SHA-256 digests, so the file
// holds no agent text. A daemon that crashes and restarts starts from
// those counts: a crash loop cannot reset them. A state file that cannot be
// read fails closed: the host is silent for an hour from start-up, and the
// log says why; so do [Decision.Reason] and [Status.HoldingBack], naming
// the file and the fix, until that hour ends.
package guard

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// The limits of D9.
const (
	PerConversation = 3  // pushes in any 60 s per conversation
	PerHostMinute   = 10 // pushes in any 60 s per host
	PerHostHour     = 30 // pushes in any hour per host; the next is the summary
	Minute          = time.Minute
	Hour            = time.Hour
	Silence         = time.Hour // after a summary, no push for this long
	TestsPerMinute  = 3         // test pushes in any 60 s, apart from the rest
)

// MemoryKeys is how many decided keys the guard remembers (the newest).
const MemoryKeys = 16384

// Outcome is what the guard decided.
type Outcome int

const (
	// Push: send the question's push.
	Push Outcome = iota
	// Summary: send one summary push in place of the question's own.
	Summary
	// Held: no push for this question, ever (a limit, or the silent hour).
	Held
	// Repeat: the key was decided before; nothing to do.
	Repeat
)

func (o Outcome) String() string {
	switch o {
	case Push:
		return "push"
	case Summary:
		return "summary"
	case Held:
		return "held"
	case Repeat:
		return "repeat"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Reasons a push is held back, as Decision.Reason says them.
const (
	ReasonConversation = "3 pushes in the last minute in this conversation"
	ReasonHostMinute   = "10 pushes in the last minute on this host"
	ReasonSilent       = "the host is silent for an hour after a summary push"
	ReasonHostHour     = "30 pushes in the last hour on this host"
	ReasonTests        = "3 test pushes in the last minute"
)

// silentUnreadable is the state file's mark of a silent hour that began
// because the file could not be read (not after a summary).
const silentUnreadable = "unreadable"

// ReasonUnreadable is why pushes are held back in the hour after the
// state file at path could not be read.
func ReasonUnreadable(path string) string {
	return fmt.Sprintf("the push guard's file %s could not be read when the daemon started, so no push goes out for an hour from then (the file is written anew); to send pushes at once: systemctl --user stop collie; rm %s; systemctl --user start collie", path, path)
}

// Decision is the guard's answer for one question.
type Decision struct {
	Outcome Outcome
	// Reason says why a push is held back; "" for Push and Summary.
	Reason string
	// Waiting is the N of a summary: the questions held back in the hour
	// before it, this one included.
	Waiting int
	// Until is when a push can go out again: for Held, when the limit
	// that held it back lets the next one out (the silent hour's end, the
	// moment a minute's window has room); for Summary, the end of the
	// silent hour it begins.
	Until time.Time

	at   int64  // Unix ms it was counted at; 0: nothing counted
	conv uint64 // its conversation, for a question's push
	test bool
}

// Options configure a Guard.
type Options struct {
	// Path is the state file (push-guard.json in the state folder); ""
	// keeps the counts in memory only (tests).
	Path string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Counters are what the guard decided since it was opened, for collie
// doctor and the journal.
type Counters struct {
	Sent      int64 `json:"sent"`      // questions' pushes delivered (or on their way)
	Held      int64 `json:"held"`      // questions held back
	Summaries int64 `json:"summaries"` // summary pushes
	Tests     int64 `json:"tests"`     // test pushes delivered
	// Undelivered counts pushes no provider delivered anywhere (every try
	// failed, or no destination): uncounted from the limits.
	Undelivered int64 `json:"undelivered"`
}

// Status is the guard's state now, for collie doctor.
type Status struct {
	Counters
	// HoldingBack says why a push now would be held back, "" when it would
	// go out (a question in a conversation with no recent push).
	HoldingBack string `json:"holdingBack,omitempty"`
	// Until is when pushes go out again, when HoldingBack is set.
	Until time.Time `json:"until,omitzero"`
	// SentLastHour counts the pushes in the hour window now.
	SentLastHour int `json:"sentLastHour"`
}

// Guard decides. It is safe for concurrent use.
type Guard struct {
	path string
	now  func() time.Time

	saveMu sync.Mutex // one Save at a time, in order

	mu       sync.Mutex
	st       state
	counters Counters
	dirty    bool
	gen      uint64 // changes since open; Save writes the newest
}

// state is what the file keeps. Times are Unix milliseconds.
type state struct {
	sent    []int64            // pushes sent in the last hour, oldest first
	conv    map[uint64][]int64 // per conversation digest: pushes in the last minute
	held    []heldBucket       // questions held back in the last hour, by second
	silent  int64              // end of the silent hour; 0: none
	why     string             // why the silent hour: "" after a summary, silentUnreadable
	tests   []int64            // test pushes in the last minute (not saved)
	keys    map[uint64]struct{}
	keyRing []uint64 // decided keys, oldest first; at most MemoryKeys
}

type heldBucket struct {
	sec   int64 // Unix second
	count int
}

// Open returns a guard with the counts in o.Path, or fresh ones when the
// file does not exist. A file that exists but cannot be read or parsed is
// an error, and the guard returned with it is silent for an hour from now
// (it fails closed): the caller logs the error and uses the guard.
func Open(o Options) (*Guard, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	g := &Guard{path: o.Path, now: o.Now, st: newState()}
	if o.Path == "" {
		return g, nil
	}
	st, err := load(o.Path, g.now())
	if err != nil {
		g.st.silent = g.now().Add(Silence).UnixMilli()
		g.st.why = silentUnreadable
		g.dirty = true
		return g, fmt.Errorf("%w; no push goes out for an hour, and the file is written anew", err)
	}
	g.st = st
	return g, nil
}

func newState() state {
	return state{conv: map[uint64][]int64{}, keys: map[uint64]struct{}{}}
}

// Digest is the truncated SHA-256 the guard keeps of a key or a
// conversation: 64 bits, so that a collision made on purpose costs 2^64
// tries, and the state file holds no agent text.
func Digest(s string) uint64 {
	sum := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(sum[:8])
}

// Decide decides the question key (its agent and tool call or question
// id, as the caller builds it) in conversation conv (its agent and
// conversation id). The first call for a key decides; every later one is
// Repeat.
func (g *Guard) Decide(key, conv string) Decision {
	k, c := Digest(key), Digest(conv)
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, seen := g.st.keys[k]; seen {
		return Decision{Outcome: Repeat}
	}
	g.remember(k)
	now := g.now().UnixMilli()
	g.prune(now)
	d := g.decide(now, c, true)
	g.dirty = true
	g.gen++
	return d
}

// Test decides a test push (collie push test): held back in the silent
// hour and by TestsPerMinute, never a summary, and counted only among
// test pushes: a test never holds a question's push back.
func (g *Guard) Test() Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now().UnixMilli()
	g.prune(now)
	if g.st.silent > now {
		return Decision{Outcome: Held, Reason: g.silentReason(), Until: time.UnixMilli(g.st.silent)}
	}
	if n := len(g.st.tests); n >= TestsPerMinute {
		return Decision{Outcome: Held, Reason: ReasonTests, Until: time.UnixMilli(g.st.tests[n-TestsPerMinute] + Minute.Milliseconds())}
	}
	g.st.tests = append(g.st.tests, now)
	g.counters.Tests++
	return Decision{Outcome: Push, at: now, test: true}
}

// Undelivered uncounts a push the guard let out (Push or Summary, a
// question's or a test) that no provider delivered anywhere: every try
// failed, or no provider had a destination. Its place in the windows is
// freed; a summary's silent hour stays. Calling it twice for one
// decision, or for one that counted nothing, does nothing more.
func (g *Guard) Undelivered(d *Decision) {
	if d.at == 0 || (d.Outcome != Push && d.Outcome != Summary) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	at := d.at
	d.at = 0
	g.counters.Undelivered++
	if d.test {
		g.st.tests = removeOne(g.st.tests, at)
		g.counters.Tests--
		return
	}
	g.st.sent = removeOne(g.st.sent, at)
	if d.Outcome == Summary {
		g.counters.Summaries--
	} else {
		g.counters.Sent--
		if ts := removeOne(g.st.conv[d.conv], at); len(ts) == 0 {
			delete(g.st.conv, d.conv)
		} else {
			g.st.conv[d.conv] = ts
		}
	}
	g.dirty = true
	g.gen++
}

// removeOne removes the last t from the sorted ts.
func removeOne(ts []int64, t int64) []int64 {
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i] == t {
			return append(ts[:i:i], ts[i+1:]...)
		}
	}
	return ts
}

// silentReason says why the silent hour holds. Callers hold g.mu.
func (g *Guard) silentReason() string {
	if g.st.why == silentUnreadable {
		return ReasonUnreadable(g.path)
	}
	return ReasonSilent
}

// decide applies the limits at now to a question of conversation c (a
// test push when question is false). Callers hold g.mu and pruned.
func (g *Guard) decide(now int64, c uint64, question bool) Decision {
	hold := func(reason string, until time.Time) Decision {
		if question { // a test is not a question: it counts nothing held back
			g.hold(now)
		}
		return Decision{Outcome: Held, Reason: reason, Until: until}
	}
	if g.st.silent > now {
		return hold(g.silentReason(), time.UnixMilli(g.st.silent))
	}
	if ts := g.st.conv[c]; question && len(ts) >= PerConversation {
		return hold(ReasonConversation, time.UnixMilli(ts[len(ts)-PerConversation]+Minute.Milliseconds()))
	}
	if until, full := g.minuteFull(now); full {
		return hold(ReasonHostMinute, until)
	}
	if len(g.st.sent) >= PerHostHour {
		if !question {
			return hold(ReasonHostHour, time.Time{})
		}
		// The 31st: one summary, then an hour of silence.
		n := 1
		for _, b := range g.st.held {
			n += b.count
		}
		g.st.sent = append(g.st.sent, now)
		g.st.silent = now + Silence.Milliseconds()
		g.st.why = ""
		g.counters.Summaries++
		return Decision{Outcome: Summary, Waiting: n, Until: time.UnixMilli(g.st.silent), at: now}
	}
	g.st.sent = append(g.st.sent, now)
	if question {
		g.st.conv[c] = append(g.st.conv[c], now)
	}
	g.counters.Sent++
	return Decision{Outcome: Push, at: now, conv: c}
}

// minuteFull reports whether PerHostMinute pushes were sent in the minute
// before now, and when the oldest of them leaves it. Callers hold g.mu.
func (g *Guard) minuteFull(now int64) (time.Time, bool) {
	if countSince(g.st.sent, now-Minute.Milliseconds()) < PerHostMinute {
		return time.Time{}, false
	}
	return time.UnixMilli(g.st.sent[len(g.st.sent)-PerHostMinute] + Minute.Milliseconds()), true
}

// hold counts a question held back at now. Callers hold g.mu.
func (g *Guard) hold(now int64) {
	sec := now / 1000
	if n := len(g.st.held); n > 0 && g.st.held[n-1].sec == sec {
		g.st.held[n-1].count++
	} else {
		g.st.held = append(g.st.held, heldBucket{sec, 1})
	}
	g.counters.Held++
}

// remember adds k to the decided keys, forgetting the oldest beyond
// MemoryKeys. Callers hold g.mu.
func (g *Guard) remember(k uint64) {
	if len(g.st.keyRing) >= MemoryKeys {
		old := g.st.keyRing[0]
		delete(g.st.keys, old)
		g.st.keyRing = g.st.keyRing[1:]
	}
	g.st.keys[k] = struct{}{}
	g.st.keyRing = append(g.st.keyRing, k)
}

// prune drops what has left every window at now. Callers hold g.mu.
func (g *Guard) prune(now int64) {
	hour, minute := now-Hour.Milliseconds(), now-Minute.Milliseconds()
	g.st.sent = dropUntil(g.st.sent, hour)
	for c, ts := range g.st.conv {
		if ts = dropUntil(ts, minute); len(ts) == 0 {
			delete(g.st.conv, c)
		} else {
			g.st.conv[c] = ts
		}
	}
	i := 0
	for i < len(g.st.held) && g.st.held[i].sec*1000 <= hour {
		i++
	}
	g.st.held = g.st.held[i:]
	if g.st.silent != 0 && g.st.silent <= now {
		g.st.silent, g.st.why = 0, ""
	}
	g.st.tests = dropUntil(g.st.tests, minute)
}

// dropUntil drops the times at or before t from the sorted ts: a time
// exactly a window ago has left the window.
func dropUntil(ts []int64, t int64) []int64 {
	i := 0
	for i < len(ts) && ts[i] <= t {
		i++
	}
	return ts[i:]
}

func countSince(ts []int64, t int64) int {
	n := 0
	for i := len(ts) - 1; i >= 0 && ts[i] > t; i-- {
		n++
	}
	return n
}

// Status reports the counters and whether a push now would be held back.
func (g *Guard) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now().UnixMilli()
	g.prune(now)
	s := Status{Counters: g.counters, SentLastHour: len(g.st.sent)}
	if g.st.silent > now {
		s.HoldingBack, s.Until = g.silentReason(), time.UnixMilli(g.st.silent)
	} else if until, full := g.minuteFull(now); full {
		s.HoldingBack, s.Until = ReasonHostMinute, until
	}
	return s
}
