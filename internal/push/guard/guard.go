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
//   - What the limits count is pushes sent: questions pushed, test pushes
//     (collie push test) and the summary. A question held back is not a
//     push and counts nothing.
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
// 0600, written whole by internal/atomicfile ([Guard.Save]); keys and
// conversations are kept only as truncated SHA-256 digests, so the file
// holds no agent text. A daemon that crashes and restarts starts from
// those counts: a crash loop cannot reset them. A state file that cannot be
// read fails closed: the host is silent for an hour from start-up, and the
// log says why.
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
)

// Decision is the guard's answer for one question.
type Decision struct {
	Outcome Outcome
	// Reason says why a push is held back; "" for Push and Summary.
	Reason string
	// Waiting is the N of a summary: the questions held back in the hour
	// before it, this one included.
	Waiting int
	// Until is when a silent hour ends: set for Summary, and for Held in
	// the silent hour.
	Until time.Time
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
	Sent      int64 `json:"sent"`      // pushes sent: questions and tests
	Held      int64 `json:"held"`      // questions held back
	Summaries int64 `json:"summaries"` // summary pushes
}

// Status is the guard's state now, for collie doctor.
type Status struct {
	Counters
	// HoldingBack says why a push now would be held back, "" when it would
	// go out (a question in a conversation with no recent push).
	HoldingBack string `json:"holdingBack,omitempty"`
	// Until is when the silent hour ends, when it holds.
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
// hour and at a host limit, never a summary, and counted as a push when
// it goes out.
func (g *Guard) Test() Decision {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now().UnixMilli()
	g.prune(now)
	d := g.decide(now, 0, false)
	g.dirty = true
	g.gen++
	return d
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
		return hold(ReasonSilent, time.UnixMilli(g.st.silent))
	}
	if question && len(g.st.conv[c]) >= PerConversation {
		return hold(ReasonConversation, time.Time{})
	}
	if countSince(g.st.sent, now-Minute.Milliseconds()) >= PerHostMinute {
		return hold(ReasonHostMinute, time.Time{})
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
		g.counters.Summaries++
		return Decision{Outcome: Summary, Waiting: n, Until: time.UnixMilli(g.st.silent)}
	}
	g.st.sent = append(g.st.sent, now)
	if question {
		g.st.conv[c] = append(g.st.conv[c], now)
	}
	g.counters.Sent++
	return Decision{Outcome: Push}
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
		g.st.silent = 0
	}
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
	switch {
	case g.st.silent > now:
		s.HoldingBack, s.Until = ReasonSilent, time.UnixMilli(g.st.silent)
	case countSince(g.st.sent, now-Minute.Milliseconds()) >= PerHostMinute:
		s.HoldingBack = ReasonHostMinute
	}
	return s
}
