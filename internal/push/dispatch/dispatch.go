// Package dispatch takes new questions from the bridge through the guard
// (internal/push/guard, D9) to every push provider, without ever holding
// up the caller: the bridge's read that found the question, and so the
// polling and the cards, go on whatever a provider does.
//
// A question is decided at once, under the guard's lock (a few hundred
// nanoseconds). A push that goes out is queued; one goroutine saves the
// guard's counts (before the push leaves, so a crash cannot forget it)
// and hands the push to each provider's own queue, and each provider's
// goroutine sends it with retries: up to Attempts tries, waiting Backoff,
// then twice as long each time (or what a 429's Retry-After asks, up to
// MaxWait), stopping at a failure marked permanent. A full queue drops the
// push with a log line; a provider that cannot send blocks no other.
//
// The journal gets a debug line for every decision (sent, held back,
// summarised, with the running counts), an info line for a summary, and
// one warning when a provider starts failing (not one per try or per
// push): later failures are debug lines until it works again, which is an
// info line. Nothing logged holds a secret: providers' errors never do.
package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/collie-linux/collie/internal/push"
	"github.com/collie-linux/collie/internal/push/guard"
)

// Retry defaults.
const (
	Attempts = 4
	Backoff  = 2 * time.Second
	MaxWait  = 5 * time.Minute
	// SaveEvery is how often the counts of held-back questions are saved
	// at most; a push saves them at once.
	SaveEvery = time.Second
	// QueueLen bounds the pushes waiting for one provider.
	QueueLen = 64
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

// ReasonNoProvider is why nothing is pushed when no provider is configured.
const ReasonNoProvider = "no push provider is configured"

// Result is the outcome of the last push a provider was given.
type Result struct {
	At       time.Time `json:"at"`
	Kind     string    `json:"kind"` // question, summary, test
	OK       bool      `json:"ok"`
	Answer   string    `json:"answer,omitempty"` // what the provider answered, or why it failed
	Attempts int       `json:"attempts"`
}

// Dispatcher decides and sends. Start it, then give it questions.
type Dispatcher struct {
	o       Options
	central chan push.Message
	dirty   chan struct{}
	workers []*worker
	wg      sync.WaitGroup

	mu   sync.Mutex
	last map[string]Result
}

type worker struct {
	p       push.Provider
	queue   chan push.Message
	failing bool // only the worker's goroutine reads and writes it
}

// New returns a dispatcher; Start runs it.
func New(o Options) *Dispatcher {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.URL == nil {
		o.URL = func() string { return "" }
	}
	d := &Dispatcher{o: o, central: make(chan push.Message, QueueLen), dirty: make(chan struct{}, 1), last: map[string]Result{}}
	for _, p := range o.Providers {
		d.workers = append(d.workers, &worker{p: p, queue: make(chan push.Message, QueueLen)})
	}
	return d
}

// Start runs the dispatcher's goroutines until ctx ends; Wait waits for
// them, and the guard's last save.
func (d *Dispatcher) Start(ctx context.Context) {
	d.wg.Add(1 + len(d.workers))
	go d.run(ctx)
	for _, w := range d.workers {
		go d.work(ctx, w)
	}
}

// Wait returns when every goroutine Start began has ended.
func (d *Dispatcher) Wait() { d.wg.Wait() }

// Preview reports whether pushes carry question text.
func (d *Dispatcher) Preview() bool { return d.o.Preview }

// Guard reports the guard's state now.
func (d *Dispatcher) Guard() guard.Status { return d.o.Guard.Status() }

// Providers names the configured providers.
func (d *Dispatcher) Providers() []string {
	out := make([]string, len(d.workers))
	for i, w := range d.workers {
		out[i] = w.p.Name()
	}
	return out
}

// Question decides q and queues its push when it gets one. It never
// blocks on a provider or on the disk.
func (d *Dispatcher) Question(q Question) guard.Decision {
	if len(d.workers) == 0 {
		// Nothing to send through: nothing is counted either.
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
		d.enqueue(Compose(q, d.o.Preview, d.o.URL()))
	case guard.Summary:
		log.Debug("push summarised", "waiting", dec.Waiting, "until", dec.Until)
		d.o.Log.Info("30 pushes in the last hour: one summary push, then no push for an hour (D9)", "waiting", dec.Waiting, "until", dec.Until.Format(time.RFC3339))
		d.enqueue(summary(dec.Waiting, dec.Until, d.o.URL()))
	case guard.Held:
		log.Debug("push held back", "reason", dec.Reason)
		d.markDirty()
	}
	return dec
}

func (d *Dispatcher) enqueue(m push.Message) {
	select {
	case d.central <- m:
	default:
		d.o.Log.Warn("a push was dropped: too many pushes waiting to be sent", "kind", kindName(m.Kind))
	}
}

func (d *Dispatcher) markDirty() {
	select {
	case d.dirty <- struct{}{}:
	default:
	}
}

// run saves the guard's counts and hands pushes to the providers.
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
		case m := <-d.central:
			save() // before the push leaves (D9: a crash must not forget it)
			for _, w := range d.workers {
				select {
				case w.queue <- m:
				default:
					d.o.Log.Warn("a push was dropped: the provider is behind", "provider", w.p.Name(), "kind", kindName(m.Kind))
				}
			}
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

// work sends what the provider's queue holds, with retries.
func (d *Dispatcher) work(ctx context.Context, w *worker) {
	defer d.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-w.queue:
			r := d.send(ctx, w.p, m)
			d.record(w, r)
		}
	}
}

// send tries m on p up to Attempts times.
func (d *Dispatcher) send(ctx context.Context, p push.Provider, m push.Message) Result {
	r := Result{Kind: kindName(m.Kind)}
	wait := Backoff
	for {
		r.Attempts++
		answer, err := sendOnce(ctx, p, m)
		r.At = time.Now()
		if err == nil {
			r.OK, r.Answer = true, answer
			return r
		}
		r.Answer = err.Error()
		if push.IsPermanent(err) || r.Attempts >= Attempts || ctx.Err() != nil {
			return r
		}
		pause := wait
		var ra *push.RetryAfterError
		if errors.As(err, &ra) {
			if ra.After > MaxWait {
				return r
			}
			pause = max(pause, ra.After)
		}
		d.o.Log.Debug("push failed; trying again", "provider", p.Name(), "attempt", r.Attempts, "in", pause.String(), "err", r.Answer)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return r
		case <-t.C:
		}
		wait *= 2
	}
}

func sendOnce(ctx context.Context, p push.Provider, m push.Message) (string, error) {
	if rp, ok := p.(push.Reporter); ok {
		return rp.SendReport(ctx, m)
	}
	if err := p.Send(ctx, m); err != nil {
		return "", err
	}
	return "sent", nil
}

// record keeps r as the provider's last result and logs a change of state
// once: the first failure is a warning, the next ones debug lines, the
// first success after them an info line.
func (d *Dispatcher) record(w *worker, r Result) {
	d.mu.Lock()
	d.last[w.p.Name()] = r
	d.mu.Unlock()
	log := d.o.Log.With("provider", w.p.Name(), "kind", r.Kind, "attempts", r.Attempts)
	switch {
	case r.OK && w.failing:
		w.failing = false
		log.Info("push provider works again", "answer", r.Answer)
	case r.OK:
		log.Debug("push delivered to the provider", "answer", r.Answer)
	case !w.failing:
		w.failing = true
		log.Warn("push provider failed; further failures are debug lines until it works again", "err", r.Answer)
	default:
		log.Debug("push provider failed again", "err", r.Answer)
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
	Answer   string `json:"answer"`
}

// Test sends one test push through the guard and, when it lets it out, to
// every provider at once (one try each, bounded by ctx), and returns what
// each answered. held is the guard's reason when it held the push back.
func (d *Dispatcher) Test(ctx context.Context) (answers []TestAnswer, held string) {
	if len(d.workers) == 0 {
		return nil, ""
	}
	dec := d.o.Guard.Test()
	st := d.o.Guard.Status()
	if dec.Outcome != guard.Push {
		d.o.Log.Debug("test push held back", "reason", dec.Reason, "sent", st.Sent, "held", st.Held, "summaries", st.Summaries)
		return nil, dec.Reason
	}
	d.o.Log.Debug("test push sent", "sent", st.Sent, "held", st.Held, "summaries", st.Summaries)
	if err := d.o.Guard.Save(); err != nil {
		d.o.Log.Error(err.Error())
	}
	m := testMessage(d.o.URL())
	answers = make([]TestAnswer, len(d.workers))
	var wg sync.WaitGroup
	for i, w := range d.workers {
		wg.Go(func() {
			answer, err := sendOnce(ctx, w.p, m)
			a := TestAnswer{Provider: w.p.Name(), OK: err == nil, Answer: answer}
			if err != nil {
				a.Answer = err.Error()
			}
			answers[i] = a
			d.mu.Lock()
			d.last[w.p.Name()] = Result{At: time.Now(), Kind: kindName(push.KindTest), OK: a.OK, Answer: a.Answer, Attempts: 1}
			d.mu.Unlock()
		})
	}
	wg.Wait()
	return answers, ""
}

func kindName(k push.Kind) string {
	switch k {
	case push.KindSummary:
		return "summary"
	case push.KindTest:
		return "test"
	}
	return "question"
}
