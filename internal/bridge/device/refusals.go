package device

import (
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Refusal is one or more writes the device API refused, as the audit log
// records them (A1). Count is how many refusals the record stands for:
// repeats of the same kind coalesce (see refusals).
type Refusal struct {
	// Device names who asked: a paired device's id, a revoked device's id
	// (its credential is still known by its hash), "unknown" for a
	// credential that matches no device, "" for a request with none. The
	// credential itself is never recorded.
	Device string
	Agent  string            // the agent named in the path
	Write  string            // "answer", "send", …
	Req    wire.WriteRequest // nil when refused before it was read
	Code   string            // the refusal's code, e.g. "cross-site"
	Reason string            // the sentence the client got
	Count  int               // at least 1
}

// RefusalWindow is how long repeats of a refusal are counted before their
// one line is written.
const RefusalWindow = time.Minute

// maxRefusalKinds bounds the kinds counted at once; past it, a new kind
// from a new source is counted under the source "other".
const maxRefusalKinds = 4096

// refusal is what the gate refused, with where it came from.
type refusal struct {
	source string
	Refusal
}

// refusalKind is what coalesces: the same source, device, write and code.
// The agent and the request are not part of it (a page may vary them at
// will); a coalesced line shows those of the first refusal it counts.
type refusalKind struct{ source, device, write, code string }

// refusals writes refused requests without letting a flood write a line
// each: the first refusal of a kind is written at once; repeats within
// RefusalWindow are counted, and written as one line with the count when
// the window closes (each window with repeats begins another, so a steady
// flood writes one line a window), or at close. No refusal is lost from a
// count when the daemon stops; the counts live in memory, so a crash loses
// those still open (collie(1) says so).
type refusals struct {
	window time.Duration
	sink   func(r refusal) // writes one record; r.Count is set

	mu     sync.Mutex
	open   map[refusalKind]*counting
	closed bool
}

type counting struct {
	first refusal // of the repeats not yet written
	n     int
	timer *time.Timer
}

func newRefusals(window time.Duration, sink func(refusal)) *refusals {
	return &refusals{window: window, sink: sink, open: map[refusalKind]*counting{}}
}

func (rs *refusals) add(r refusal) {
	r.Count = 1
	k := refusalKind{r.source, r.Device, r.Write, r.Code}
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		rs.sink(r)
		return
	}
	c, ok := rs.open[k]
	if !ok && len(rs.open) >= maxRefusalKinds {
		k.source, r.source = "other", "other"
		c, ok = rs.open[k]
	}
	if !ok {
		rs.open[k] = &counting{timer: time.AfterFunc(rs.window, func() { rs.flush(k) })}
		rs.mu.Unlock()
		rs.sink(r)
		return
	}
	if c.n == 0 {
		c.first = r
	}
	c.n++
	rs.mu.Unlock()
}

// flush ends k's window: its repeats become one line, and another window
// begins; a window without repeats ends the kind.
func (rs *refusals) flush(k refusalKind) {
	rs.mu.Lock()
	c, ok := rs.open[k]
	if !ok {
		rs.mu.Unlock()
		return
	}
	if c.n == 0 {
		delete(rs.open, k)
		rs.mu.Unlock()
		return
	}
	r := c.first
	r.Count = c.n
	c.first, c.n = refusal{}, 0
	c.timer.Reset(rs.window)
	rs.mu.Unlock()
	rs.sink(r)
}

// close writes every count still open; later refusals are written at once.
func (rs *refusals) close() { rs.end(true) }

// flushAll ends every window now, writing the counts still open.
func (rs *refusals) flushAll() { rs.end(false) }

func (rs *refusals) end(closing bool) {
	rs.mu.Lock()
	rs.closed = rs.closed || closing
	var out []refusal
	for k, c := range rs.open {
		c.timer.Stop()
		if c.n > 0 {
			r := c.first
			r.Count = c.n
			out = append(out, r)
		}
		delete(rs.open, k)
	}
	rs.mu.Unlock()
	for _, r := range out {
		rs.sink(r)
	}
}
