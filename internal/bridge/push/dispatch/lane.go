package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
)

// Lanes. A push the guard let out goes to every provider in use, and in
// each provider to every destination it has now (one for ntfy or the
// desktop; one per subscribed device for Web Push, a push.Fanout). Each
// destination has its own lane: a queue of at most LaneQueue pushes and
// at most one push on its way, each try bounded by push.AttemptTimeout
// and retried with backoff in that lane alone. So a push service that
// holds its answer or never answers delays only the pushes to that one
// destination, a retry goes only where the push was not taken, and a lane
// runs a goroutine only while it has pushes to send.

// worker is one provider and its lanes.
type worker struct {
	p   push.Provider
	fan push.Fanout // p, when it has several destinations; else nil

	// ctx and stop are set when the dispatcher starts the worker.
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	stopped bool             // removed by SetProviders: takes no push
	lanes   map[string]*lane // by push.Destination.Key
	wg      sync.WaitGroup   // the lanes' goroutines
}

func newWorker(p push.Provider) *worker {
	w := &worker{p: p, lanes: map[string]*lane{}}
	w.fan, _ = p.(push.Fanout)
	return w
}

// lane is one destination's queue.
type lane struct {
	w    *worker
	dest push.Destination

	mu       sync.Mutex
	queue    []job
	running  bool // a goroutine is sending what queue holds
	dropping bool // a drop was logged; reset when the queue empties

	failing bool // only the lane's goroutine reads and writes it
}

// job is one push on its way to one destination.
type job struct {
	m push.Message
	s *share
}

// ticket follows one push the guard counted to every provider it went to:
// when the last is done and none delivered it, the guard uncounts it.
type ticket struct {
	d   *Dispatcher
	dec guard.Decision

	mu        sync.Mutex
	left      int
	delivered bool
}

// done is one provider's end of the push.
func (t *ticket) done(delivered bool) {
	t.mu.Lock()
	t.left--
	t.delivered = t.delivered || delivered
	last := t.left == 0 && !t.delivered
	t.mu.Unlock()
	if last {
		t.d.undelivered(t)
	}
}

// share is one provider's part of one push: the destinations it went to.
// When the last is done it is the provider's last result and its end of
// the ticket.
type share struct {
	t *ticket
	w *worker

	mu      sync.Mutex
	left    int
	r       Result
	answers []string
}

// done is one destination's end of the push.
func (s *share) done(r Result) {
	s.mu.Lock()
	s.left--
	if s.answers == nil {
		s.r = r
	} else {
		s.r.At = later(s.r.At, r.At)
		s.r.OK = s.r.OK && r.OK
		s.r.Delivered = s.r.Delivered || r.Delivered
		s.r.Attempts = max(s.r.Attempts, r.Attempts)
	}
	s.answers = append(s.answers, r.Answer)
	last := s.left == 0
	if last && len(s.answers) > 1 {
		s.r.Answer = strings.Join(s.answers, "; ")
	}
	r = s.r
	s.mu.Unlock()
	if last {
		d := s.t.d
		d.mu.Lock()
		d.last[s.w.p.Name()] = r
		d.mu.Unlock()
		s.t.done(r.Delivered)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pending is a push between the guard and the lanes.
type pending struct {
	m push.Message
	t *ticket
}

// handOver gives j to every destination of every provider in use.
func (d *Dispatcher) handOver(j pending) {
	type part struct {
		w     *worker
		lanes []*lane
	}
	var parts []part
	for _, w := range d.inUse() {
		if ls := w.destinations(); len(ls) > 0 {
			parts = append(parts, part{w, ls})
		}
	}
	t := j.t
	if len(parts) == 0 {
		t.done(false)
		return
	}
	t.mu.Lock()
	t.left += len(parts) - 1 // the 1 enqueue gave it is this hand-over's
	t.mu.Unlock()
	for _, p := range parts {
		s := &share{t: t, w: p.w, left: len(p.lanes)}
		for _, l := range p.lanes {
			d.push(l, job{m: j.m, s: s})
		}
	}
}

// destinations are w's lanes for its destinations now: a lane kept for a
// destination it had, a new one for a new destination; a destination gone
// loses its lane (a push still queued there is tried, and finds it gone).
func (w *worker) destinations() []*lane {
	dests := []push.Destination{{Name: w.p.Name()}}
	if w.fan != nil {
		dests = w.fan.Destinations()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil
	}
	lanes := make(map[string]*lane, len(dests))
	out := make([]*lane, 0, len(dests))
	for _, dst := range dests {
		if _, dup := lanes[dst.Key]; dup {
			continue
		}
		l := w.lanes[dst.Key]
		if l == nil {
			l = &lane{w: w, dest: dst}
		}
		lanes[dst.Key] = l
		out = append(out, l)
	}
	w.lanes = lanes
	return out
}

// push queues j in l, starting l's goroutine when it has none. A full
// lane drops its oldest push (a newer question matters more), with one
// warning until the lane empties: memory stays bounded however long a
// destination does not answer, and no other lane is touched.
func (d *Dispatcher) push(l *lane, j job) {
	w := l.w
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		j.s.done(Result{At: time.Now(), Kind: j.m.Kind.String(), Answer: "the provider was taken out of use"})
		return
	}
	l.mu.Lock()
	var dropped *job
	warn := false
	if len(l.queue) >= LaneQueue {
		old := l.queue[0]
		dropped = &old
		copy(l.queue, l.queue[1:])
		l.queue[len(l.queue)-1] = job{}
		l.queue = l.queue[:len(l.queue)-1]
		warn = !l.dropping
		l.dropping = true
	}
	l.queue = append(l.queue, j)
	start := !l.running
	l.running = true
	if start {
		w.wg.Add(1)
		d.wg.Add(1)
	}
	l.mu.Unlock()
	w.mu.Unlock()
	if start {
		go d.drain(w.ctx, l)
	}
	if dropped == nil {
		return
	}
	log := d.laneLog(l, dropped.m.Kind.String())
	if warn {
		log.Warn(fmt.Sprintf("a push destination is not keeping up: at most %d pushes wait for it, and the oldest is dropped for each new one until it catches up", LaneQueue))
	} else {
		log.Debug("a push was dropped: its destination is not keeping up")
	}
	dropped.s.done(Result{At: time.Now(), Kind: dropped.m.Kind.String(), Answer: "dropped: the destination did not keep up"})
}

// drain sends what l holds, one push at a time, until it is empty.
func (d *Dispatcher) drain(ctx context.Context, l *lane) {
	defer d.wg.Done()
	defer l.w.wg.Done()
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running, l.dropping = false, false
			l.queue = nil // an idle lane holds no memory
			l.mu.Unlock()
			return
		}
		j := l.queue[0]
		copy(l.queue, l.queue[1:])
		l.queue[len(l.queue)-1] = job{}
		l.queue = l.queue[:len(l.queue)-1]
		l.mu.Unlock()
		var r Result
		if ctx.Err() != nil {
			r = Result{At: time.Now(), Kind: j.m.Kind.String(), Answer: "the provider was taken out of use"}
		} else {
			var gone bool
			r, gone = d.send(ctx, l, j.m)
			if !gone {
				d.record(l, r)
			}
		}
		j.s.done(r)
	}
}

// send tries m at l's destination up to Attempts times; a failure marked
// permanent (a 4xx, a redirect) gets one try. gone: the destination has
// gone (nothing to retry or warn about).
func (d *Dispatcher) send(ctx context.Context, l *lane, m push.Message) (r Result, gone bool) {
	r = Result{Kind: m.Kind.String()}
	wait := Backoff
	for {
		r.Attempts++
		answer, err := l.sendOnce(ctx, m)
		r.At = time.Now()
		if err == nil {
			r.OK, r.Delivered, r.Answer = true, true, answer
			return r, false
		}
		r.Delivered = r.Delivered || push.DeliveredTo(err) > 0
		r.Answer = err.Error()
		if errors.Is(err, push.ErrGone) {
			r.OK = true // not a failure: there is no one there now
			return r, true
		}
		if push.IsPermanent(err) || r.Attempts >= Attempts || ctx.Err() != nil {
			return r, false
		}
		pause := wait
		var ra *push.RetryAfterError
		if errors.As(err, &ra) {
			if ra.After > MaxWait {
				return r, false
			}
			pause = max(pause, ra.After)
		}
		d.laneLog(l, r.Kind).Debug("push failed; trying again", "attempt", r.Attempts, "in", pause.String(), "err", r.Answer)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, false
		case <-t.C:
		}
		wait *= 2
	}
}

// sendOnce is one try at l's destination, bounded by push.AttemptTimeout.
func (l *lane) sendOnce(ctx context.Context, m push.Message) (string, error) {
	if l.w.fan == nil {
		return sendOnce(ctx, l.w.p, m)
	}
	ctx, cancel := context.WithTimeout(ctx, push.AttemptTimeout)
	defer cancel()
	return l.w.fan.SendTo(ctx, l.dest.Key, m)
}

// sendOnce is one try of m on p (every destination of a Fanout at once),
// bounded by push.AttemptTimeout.
func sendOnce(ctx context.Context, p push.Provider, m push.Message) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, push.AttemptTimeout)
	defer cancel()
	if rp, ok := p.(push.Reporter); ok {
		return rp.SendReport(ctx, m)
	}
	if err := p.Send(ctx, m); err != nil {
		return "", err
	}
	return "sent", nil
}

// laneLog is the log with l's provider, and its destination when the
// provider has several.
func (d *Dispatcher) laneLog(l *lane, kind string) *slog.Logger {
	log := d.o.Log.With("provider", l.w.p.Name(), "kind", kind)
	if l.w.fan != nil {
		log = log.With("destination", l.dest.Name)
	}
	return log
}

// record logs a change of l's state once: the first failure is a warning,
// the next ones debug lines, the first success after them an info line.
func (d *Dispatcher) record(l *lane, r Result) {
	log := d.laneLog(l, r.Kind).With("attempts", r.Attempts)
	switch {
	case r.OK && l.failing:
		l.failing = false
		log.Info("push provider works again", "answer", r.Answer)
	case r.OK:
		log.Debug("push delivered to the provider", "answer", r.Answer)
	case !l.failing:
		l.failing = true
		// Several destinations' failures are joined by newlines: one line.
		log.Warn("push provider failed; further failures are debug lines until it works again", "err", strings.ReplaceAll(r.Answer, "\n", "; "))
	default:
		log.Debug("push provider failed again", "err", r.Answer)
	}
}
