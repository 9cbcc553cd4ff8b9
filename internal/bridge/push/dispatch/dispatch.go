// Package dispatch takes new questions from the bridge through the guard
// (internal/bridge/push/guard, D9) to every push provider, without ever holding
// up the caller: the bridge's read that found the question, and so the
// polling and the cards, go on whatever a provider does.
//
// A question is decided at once, under the guard's lock (a few hundred
// nanoseconds), once, before its push goes anywhere. A push that goes out
// is queued; one goroutine saves the guard's counts (before the push
// leaves, so a crash cannot forget it) and hands the push to every
// destination of every provider in use: ntfy and the desktop have one,
// Web Push one per subscribed device (a push.Fanout). Each destination has
// its own lane (lane.go): a queue of at most LaneQueue pushes, one push on
// its way at a time, each try bounded by push.AttemptTimeout, up to
// Attempts tries, waiting Backoff, then twice as long each time (or what
// a Retry-After asks, up to MaxWait), stopping at a failure marked
// permanent. A destination that is slow or never answers delays only its
// own lane; a retry goes only to a destination that did not take the
// push; a full lane drops its own oldest push, with one warning.
//
// A provider with nowhere to deliver to (push.Idler: Web Push before any
// device turned notifications on) is not in use: nothing goes through it.
// With no provider in use a question is not decided at all, and counts
// nothing. A push the guard let out counts against its limits only when
// it was delivered: when every provider it went to failed all its tries
// (or it was dropped), the guard uncounts it (guard.Undelivered).
//
// The journal gets a debug line for every push sent, an info line for
// every push held back (with its reason and when pushes go out again), for
// a summary, and for a push that reached no one, and one warning when a
// provider starts failing (not one per try or per push): later failures
// are debug lines until it works again, which is an info line; for a
// provider with several destinations, each is one warning. Nothing logged
// holds a secret: providers' errors never do, nor destinations' names.
package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/guard"
)

// Retry defaults.
const (
	Attempts = 4
	Backoff  = 2 * time.Second
	MaxWait  = 5 * time.Minute
	// SaveEvery is how often the counts of held-back questions are saved
	// at most; a push saves them at once.
	SaveEvery = time.Second
	// QueueLen bounds the pushes decided and waiting for the lanes (a
	// hand-over takes microseconds and a disk write).
	QueueLen = 64
	// LaneQueue bounds the pushes waiting for one destination: a
	// destination that does not answer holds at most this many, and its
	// oldest is dropped for each new one.
	LaneQueue = 64
)

// Options configure a Dispatcher.
type Options struct {
	Guard     *guard.Guard
	Providers []push.Provider
	Log       *slog.Logger
	// Preview puts question text in the body ([push] preview, D4).
	Preview bool
	// URL returns the address a push opens (the web app); "" for none.
	URL func() string
}

// ReasonNoProvider is why nothing is pushed when no provider is in use:
// none is configured, or none has anywhere to deliver to.
const ReasonNoProvider = "no push provider is in use"

// Result is the outcome of the last push a provider was done with. For a
// provider with several destinations it is the push's at all of them,
// once the last was done: OK when every one took it (or had gone), the
// most tries any needed, and their answers joined by "; ".
type Result struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"` // question, summary, test
	OK       bool      `json:"ok"`
	Answer   string    `json:"answer,omitempty"` // what the provider answered, or why it failed
	Attempts int       `json:"attempts"`
	// Delivered: it reached at least one destination (OK, or a failure
	// that still reached some of them).
	Delivered bool `json:"delivered"`
}

// Dispatcher decides and sends. Start it, then give it questions.
type Dispatcher struct {
	o       Options
	central chan pending
	dirty   chan struct{}
	wg      sync.WaitGroup

	mu      sync.Mutex
	ctx     context.Context // Start's: new workers run under it
	workers []*worker
	preview bool
	last    map[string]Result
}

func (d *Dispatcher) undelivered(t *ticket) {
	d.o.Guard.Undelivered(&t.dec)
	d.o.Log.Info("a push reached no one (every provider failed or had nowhere to send it); it does not count against the push limits", "outcome", t.dec.Outcome.String())
	d.markDirty()
}

// New returns a dispatcher; Start runs it.
func New(o Options) *Dispatcher {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.URL == nil {
		o.URL = func() string { return "" }
	}
	d := &Dispatcher{o: o, central: make(chan pending, QueueLen), dirty: make(chan struct{}, 1), last: map[string]Result{}, preview: o.Preview}
	d.workers = newWorkers(o.Providers, nil)
	return d
}

// newWorkers makes a worker for each provider, keeping the worker (and
// its lanes) of a provider that is in old already.
func newWorkers(ps []push.Provider, old []*worker) []*worker {
	out := make([]*worker, 0, len(ps))
	for _, p := range ps {
		var w *worker
		for _, o := range old {
			if o.p == p {
				w = o
			}
		}
		if w == nil {
			w = newWorker(p)
		}
		out = append(out, w)
	}
	return out
}

// Start runs the dispatcher until ctx ends; Wait waits for its goroutines,
// and the guard's last save.
func (d *Dispatcher) Start(ctx context.Context) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ctx = ctx
	for _, w := range d.workers {
		d.startLocked(w) // before run can hand a push to w
	}
	d.wg.Add(1)
	go d.run(ctx)
}

// startLocked gives w the context its lanes send under. Callers hold
// d.mu, after Start.
func (d *Dispatcher) startLocked(w *worker) {
	w.ctx, w.stop = context.WithCancel(d.ctx)
}

// SetProviders puts ps in place of the providers (a reload of
// config.toml), with previews on or off. A provider in both lists keeps
// its worker and its lanes; the others are stopped (a push on its way
// through them is cut, and what waits for them is dropped: neither counts
// as delivered by them), and SetProviders returns when their lanes have
// ended, so the caller may close those providers.
func (d *Dispatcher) SetProviders(ps []push.Provider, preview bool) {
	d.mu.Lock()
	old := d.workers
	d.workers = newWorkers(ps, old)
	d.preview = preview
	var stopped []*worker
	for _, o := range old {
		if !slices.Contains(d.workers, o) {
			stopped = append(stopped, o)
		}
	}
	if d.ctx != nil {
		for _, w := range d.workers {
			if w.stop == nil {
				d.startLocked(w)
			}
		}
	}
	d.mu.Unlock()
	for _, w := range stopped {
		w.mu.Lock()
		w.stopped = true // no lane starts after this: wg.Wait below is safe
		w.mu.Unlock()
		if w.stop != nil {
			w.stop()
		}
		w.wg.Wait()
	}
}

// Wait returns when every goroutine Start began has ended.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// Preview reports whether pushes carry question text.
func (d *Dispatcher) Preview() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.preview
}

// Guard reports the guard's state now.
func (d *Dispatcher) Guard() guard.Status { return d.o.Guard.Status() }

// Providers names the providers in use: configured, with somewhere to
// deliver to.
func (d *Dispatcher) Providers() []string {
	out := []string{}
	for _, w := range d.inUse() {
		out = append(out, w.p.Name())
	}
	return out
}

// Idle says, for each configured provider that has nowhere to deliver to,
// "name: why".
func (d *Dispatcher) Idle() []string {
	var out []string
	for _, w := range d.current() {
		if why := push.IdleReason(w.p); why != "" {
			out = append(out, w.p.Name()+": "+why)
		}
	}
	return out
}

func (d *Dispatcher) current() []*worker {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.workers)
}

// inUse are the workers whose provider has somewhere to deliver to now.
func (d *Dispatcher) inUse() []*worker {
	ws := d.current()
	out := ws[:0]
	for _, w := range ws {
		if push.IdleReason(w.p) == "" {
			out = append(out, w)
		}
	}
	return out
}

// Question decides q and queues its push when it gets one. It never
// blocks on a provider or on the disk.
func (d *Dispatcher) Question(q Question) guard.Decision {
	if len(d.inUse()) == 0 {
		// Nothing would receive it: nothing is decided or counted.
		return guard.Decision{Outcome: guard.Held, Reason: ReasonNoProvider}
	}
	dec := d.o.Guard.Decide(q.Key(), q.ConversationKey())
	if dec.Outcome == guard.Repeat {
		return dec
	}
	st := d.o.Guard.Status()
	log := d.o.Log.With("agent", q.Agent, "conversation", q.Conversation, "question", q.ID, "sent", st.Sent, "held", st.Held, "summaries", st.Summaries)
	switch dec.Outcome {
	case guard.Push:
		log.Debug("push sent")
		d.enqueue(Compose(q, d.Preview(), d.o.URL()), dec)
	case guard.Summary:
		log.Debug("push summarised", "waiting", dec.Waiting, "until", dec.Until)
		d.o.Log.Info(fmt.Sprintf("30 pushes in the last hour: one summary push for %d questions waiting, then no push until %s", dec.Waiting, clock(dec.Until)))
		d.enqueue(summary(dec.Waiting, dec.Until, d.o.URL()), dec)
	case guard.Held:
		log.Info(MsgHeld, "reason", HeldWhy(dec.Reason, dec.Until))
		d.markDirty()
	}
	return dec
}

// Journal lines of a push held back; the handler adds the reason (with
// when the next can go out) to the message.
const (
	MsgHeld     = "a question's push was held back"
	MsgTestHeld = "a test push was held back"
)

// HeldWhy is why a push was held back and when the next can go out.
func HeldWhy(reason string, until time.Time) string {
	if until.IsZero() {
		return reason
	}
	return fmt.Sprintf("%s; the next can go out at %s", reason, clock(until))
}

// clock is a time of day as the journal and doctor show it.
func clock(t time.Time) string { return t.Local().Format("15:04:05") }

func (d *Dispatcher) enqueue(m push.Message, dec guard.Decision) {
	j := pending{m: m, t: &ticket{d: d, dec: dec, left: 1}}
	select {
	case d.central <- j:
	default:
		d.o.Log.Warn("a push was dropped: too many pushes waiting to be sent", "kind", m.Kind.String())
		j.t.done(false)
	}
}

func (d *Dispatcher) markDirty() {
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// run saves the guard's counts and hands pushes to the providers in use.
func (d *Dispatcher) run(ctx context.Context) {
	defer d.wg.Done()
	var timer *time.Timer
	var timerC <-chan time.Time
	var saved time.Time
	save := func() {
		if err := d.o.Guard.Save(); err != nil {
			d.o.Log.Error(err.Error() + "; the counts may not survive a restart")
		}
		saved = time.Now()
	}
	defer save()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-d.central:
			save() // before the push leaves (D9: a crash must not forget it)
			d.handOver(j)
		case <-d.dirty:
			if wait := SaveEvery - time.Since(saved); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
					timerC = timer.C
				}
				continue
			}
			save()
		case <-timerC:
			timer, timerC = nil, nil
			save()
		}
	}
}

// Last returns each provider's last result, by name.
func (d *Dispatcher) Last() map[string]Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]Result, len(d.last))
	for k, v := range d.last {
		out[k] = v
	}
	return out
}

// TestAnswer is what one provider answered collie push test.
type TestAnswer struct {
	Provider string `json:"provider"`
	OK       bool   `json:"ok"`
	// Idle: the provider has nowhere to deliver to (Answer says why), so
	// nothing was sent through it.
	Idle   bool   `json:"idle,omitempty"`
	Answer string `json:"answer"`
}

// TestOutcome is what collie push test did.
type TestOutcome struct {
	Answers []TestAnswer
	// Held is the guard's reason when it held the test push back, and
	// Until when a test push can go out again.
	Held  string
	Until time.Time
}

// Test sends one test push to every provider in use at once (one try
// each, bounded by ctx), when the guard lets it out, and returns what each
// answered; a provider with nowhere to deliver to answers Idle. A test
// push that reached no one counts nothing.
func (d *Dispatcher) Test(ctx context.Context) TestOutcome {
	var out TestOutcome
	var ws []*worker
	for _, w := range d.current() {
		if why := push.IdleReason(w.p); why != "" {
			out.Answers = append(out.Answers, TestAnswer{Provider: w.p.Name(), Idle: true, Answer: why})
		} else {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 {
		return out
	}
	dec := d.o.Guard.Test()
	if dec.Outcome != guard.Push {
		d.o.Log.Info(MsgTestHeld, "reason", HeldWhy(dec.Reason, dec.Until))
		out.Held, out.Until = dec.Reason, dec.Until
		return out
	}
	d.o.Log.Debug("test push sent")
	m := testMessage(d.o.URL())
	answers := make([]TestAnswer, len(ws))
	delivered := make([]bool, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			answer, err := sendOnce(ctx, w.p, m)
			a := TestAnswer{Provider: w.p.Name(), OK: err == nil, Answer: answer}
			delivered[i] = err == nil || push.DeliveredTo(err) > 0
			if err != nil {
				a.Answer = err.Error()
			}
			answers[i] = a
			d.mu.Lock()
			d.last[w.p.Name()] = Result{At: time.Now(), Kind: push.KindTest.String(), OK: a.OK, Answer: a.Answer, Attempts: 1, Delivered: delivered[i]}
			d.mu.Unlock()
		})
	}
	wg.Wait()
	if !slices.Contains(delivered, true) {
		d.o.Guard.Undelivered(&dec)
	}
	out.Answers = append(answers, out.Answers...)
	return out
}
