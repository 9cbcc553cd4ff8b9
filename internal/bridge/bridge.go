// Package bridge is the collie daemon: it reads each attached durable agent,
// keeps what they show after cleaning, and serves it to the collie command
// and the device API.
//
// It heads the bridge's group, the packages below it: upstream (the client
// of an agent) and sources (sources.json), device (the device API and its
// web app), control (the control socket), view (the model both send),
// audit (the audit log and receipts), push/... (the guard and the
// providers), doctor (collie doctor) and config (config.toml, the XDG
// paths). The group may link the protocol, the Linux primitives, the CLI
// core and agent login's service side; only cmd/collie links this package.
//
// An agent that honours waiting reads is held in one: its
// change reaches the bridge in milliseconds, and an idle agent is asked
// once a minute (1,440 requests a day). An agent that does not is polled
// at the seed's cadence (K8). One scheduler serves them all (sched.go).
//
// What 1,000 agents held in waiting reads cost, measured by
// BenchmarkLoadThousand (make bench; a child process, light agents on Unix
// sockets): see the README's performance section. Per held socket agent
// the bridge keeps one goroutine blocked in its read, the connection's
// descriptor (no transport goroutines, no buffer while the read is held:
// see internal/bridge/upstream) and the agent's cleaned snapshot.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-linux/collie/internal/bridge/config"
	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/bridge/push/dispatch"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/bridge/sources"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/linux/systemd"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
	"github.com/collie-linux/collie/internal/login/loginhost"
	"github.com/collie-linux/collie/internal/login/loginservice"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Poll cadence (K8): every 10 s while no device looks, every 2 s while one
// does; an agent that is down or refuses the token at most every 10 s.
const (
	IdleInterval   = 10 * time.Second
	ActiveInterval = 2 * time.Second
)

// pollTimeout bounds one poll: connect, headers and body.
const pollTimeout = 10 * time.Second

// Options configure a Bridge.
type Options struct {
	Paths config.Paths
	UID   int
	Log   *slog.Logger
	// Notify sends a state line to the service manager (sd_notify); nil
	// when not run by systemd.
	Notify func(state string)
	// Interval and Active override IdleInterval and ActiveInterval (tests).
	Interval, Active time.Duration
	// Wait overrides Wait, the wait asked of an agent (tests).
	Wait time.Duration
	// Changed, when set, is called each time the bridge's view changed,
	// after the device API was told (tests and the latency tool).
	Changed func()
	// Fresh overrides the package's Fresh (tests).
	Fresh time.Duration
	// Devices is where the device API listens; nil turns it off.
	Devices *device.ListenConfig
	// Audit records every write a device asks for (A1); nil: none.
	Audit device.Recorder
	// Push decides and sends a push for each new question (D4, D9); nil:
	// none. Run starts it and waits for it.
	Push *dispatch.Dispatcher
	// PushOff lists the push providers configured or expected but left
	// out, each with why (doctor); read at each status, since a reload of
	// config.toml changes it. Nil: none.
	PushOff func() []string
	// Config reports what the daemon made of config.toml (doctor); nil
	// for none (collie demo).
	Config func() control.ConfigState
	// WebPush, when set, is Push's Web Push provider: the device API
	// serves its key and its subscriptions are the device store's.
	WebPush *webpush.Provider
	// Agents is [agents]: agent login for agents on an agent platform,
	// served beside the device API.
	Agents config.Agents
}

// Bridge holds the attached agents and their scheduler.
type Bridge struct {
	o   Options
	ctx context.Context // set by Run; reads live under it

	watching atomic.Bool // a device is looking (K8)
	wake     chan struct{}
	wg       sync.WaitGroup // the scheduler and the reads under way

	https upstream.Shared // what the HTTPS agents' clients share: roots, turns to connect

	mu          sync.Mutex
	agents      map[string]*agent
	heap        agentHeap          // agents by when they are next due
	schedCancel context.CancelFunc // stops the scheduler; nil until it runs

	// The device API, when it is on.
	devices  *store.Store
	pairings *store.Pairings
	api      *device.API
	apiURL   string
	apiFP    string
	apiReach string       // control.Reach* of apiURL
	web      atomic.Value // string: the web app's address, for pushes

	// Agent sessions (agents.go), while the device API listens.
	sessions *loginservice.Store
	host     *loginhost.Host
}

// agent is one attached durable agent and what was last read from it.
type agent struct {
	src    sources.Source
	hosted bool // an agent session's board (agents.go), not from sources.json
	client upstream.Client
	waiter upstream.Waiter // client, when it can wait; nil: never asked to
	ctx    context.Context // ends when the agent is detached
	cancel context.CancelFunc

	// Guarded by Bridge.mu.
	status view.AgentStatus
	snap   *wire.Snapshot
	line   *wire.Lineage // how snap relates to the earlier ones (snapshot deltas)
	etag   string
	polled chan struct{}       // closed and replaced after each poll; nil: never polled
	asked  map[string]struct{} // the guard's keys of the last snapshot's questions (push.go)

	// Scheduling (sched.go), guarded by Bridge.mu.
	state    state
	due      time.Time               // next read, or next walk of a held read's path
	index    int                     // in Bridge.heap; -1 when not in it
	reading  bool                    // a read is under way
	stopRead context.CancelCauseFunc // ends the read under way
	sent     time.Time               // when the last read was sent
	wait     time.Duration           // the wait asked for
	cutAt    time.Time               // when a proxy last cut a wait
	lastCut  time.Duration           // how long the last cut read was held; 0: no cut since a wait ended
	tokens   float64                 // pacing of reads after a change
	tokAt    time.Time
}

// New returns a bridge; Run starts it.
func New(o Options) *Bridge {
	if o.Interval == 0 {
		o.Interval = IdleInterval
	}
	if o.Active == 0 {
		o.Active = ActiveInterval
	}
	if o.Notify == nil {
		o.Notify = func(string) {}
	}
	if o.Fresh == 0 {
		o.Fresh = Fresh
	}
	if o.Wait == 0 {
		o.Wait = Wait
	}
	return &Bridge{o: o, agents: map[string]*agent{}, wake: make(chan struct{}, 1)}
}

// Run tightens sources.json, starts a poller per agent, serves the control
// socket, tells systemd it is ready, and runs until ctx ends.
func (b *Bridge) Run(ctx context.Context) error {
	b.mu.Lock()
	b.ctx = ctx
	b.mu.Unlock()
	path := b.o.Paths.Sources()
	if tightened, old, err := sources.Tighten(path); err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	} else if tightened {
		b.o.Log.Warn("sources.json was readable by others; set its mode to 0600", journald.MessageID(journald.MsgSourcesTightened), "path", path, "old_mode", fmt.Sprintf("%04o", old.Perm()))
	}
	l, err := control.Listen(b.o.Paths.Control(), b.o.Log)
	if err != nil {
		return err
	}
	if b.o.Push != nil {
		pctx, stop := context.WithCancel(ctx)
		b.o.Push.Start(pctx)
		defer func() { stop(); b.o.Push.Wait() }() // the guard's last save
	}
	if err := b.Reload(); err != nil {
		l.Close()
		return err
	}
	stopDevices, err := b.startDevices(ctx)
	if err != nil {
		l.Close()
		b.stopAll()
		return err
	}
	defer stopDevices()
	b.o.Log.Info("collie daemon started", journald.MessageID(journald.MsgDaemonStarted), "control", b.o.Paths.Control(), "agents", len(b.Agents()), "devices", b.apiURL)
	b.o.Notify(systemd.StateReady + "\n" + b.statusLine())
	err = control.Serve(ctx, l, b, b.o.Log)
	b.o.Notify(systemd.StateStopping)
	b.stopAll()
	return err
}

// Reload reads sources.json and starts or stops pollers to match it.
func (b *Bridge) Reload() error {
	f, err := sources.Load(b.o.Paths.Sources())
	if err != nil {
		return err
	}
	want := map[string]sources.Source{}
	for _, s := range f.Sources {
		want[s.Name] = s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ctx == nil {
		// Pollers live under Run's context (a SIGHUP before Run).
		return errors.New("the bridge is not running yet; reload once it has started")
	}
	for name, a := range b.agents {
		if a.hosted {
			continue
		}
		if s, ok := want[name]; !ok || s != a.src {
			b.detach(a)
			delete(b.agents, name)
		}
	}
	for name, s := range want {
		if _, ok := b.agents[name]; ok {
			continue
		}
		b.start(s)
	}
	return nil
}

// start begins reading s. Callers hold b.mu.
func (b *Bridge) start(s sources.Source) {
	var client upstream.Client
	var err error
	switch {
	case s.Refused != "":
		// sources.Load refused its socket path (T2): never dialled.
		err = errors.New(s.Refused)
	case s.Transport() == "socket":
		client = upstream.NewSocket(s.Socket, b.o.UID)
	default:
		client, err = upstream.NewHTTPS(s.URL, s.Token, upstream.HTTPSOptions{CAFile: s.CAFile, Shared: &b.https})
	}
	b.add(s, client, err)
}

// add attaches s, read through client, or kept with err as its reason
// and never read. Callers hold b.mu.
func (b *Bridge) add(s sources.Source, client upstream.Client, err error) *agent {
	ctx, cancel := context.WithCancel(b.ctx)
	a := &agent{
		src: s, client: client, ctx: ctx, cancel: cancel, index: -1, wait: b.o.Wait,
		status: view.AgentStatus{Name: s.Name, Transport: s.Transport(), Target: s.Socket, Reason: "not polled yet", Mode: modeFirst},
		polled: make(chan struct{}),
	}
	if s.Transport() != "socket" {
		a.status.Target, a.status.TokenSet = s.URL, s.Token != ""
	}
	a.waiter, _ = client.(upstream.Waiter)
	b.agents[s.Name] = a
	if err != nil {
		// Kept in the list with its reason, not read until it is fixed.
		a.status.Reason, a.status.Mode, a.polled = cleanReason(err.Error()), "", nil
		b.o.Log.Warn("durable agent is unreachable", journald.MessageID(journald.MsgAgentUnreachable), "agent", s.Name, "reason", a.status.Reason)
		cancel()
		return a
	}
	b.startScheduler()
	b.dueAt(a, time.Now())
	return a
}

// detach stops reading a: its read under way ends, its kept connections
// close. Callers hold b.mu.
func (b *Bridge) detach(a *agent) {
	a.cancel()
	b.unschedule(a)
	if a.waiter != nil {
		a.waiter.Close()
	}
}

// SetWatching says whether a device is looking. While one is, reachable
// agents that are polled are polled every 2 s instead of 10 s, starting
// now (K8); an agent held in a waiting read already answers at once.
func (b *Bridge) SetWatching(on bool) {
	if b.watching.Swap(on) == on || !on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.agents {
		if !a.status.Reachable || a.state != statePolled {
			continue // down or refusing the token: stays at the idle cadence
		}
		b.readNow(a)
		a.status.Mode = b.mode(a)
	}
}

// next is how long a polled agent waits before its next poll (K8).
// Callers hold b.mu.
func (b *Bridge) next(a *agent) time.Duration {
	if a.status.Reachable && b.watching.Load() {
		return b.o.Active
	}
	return b.o.Interval
}

// stopAll stops every read and the scheduler, and waits for them.
func (b *Bridge) stopAll() {
	b.mu.Lock()
	for _, a := range b.agents {
		b.detach(a)
	}
	if b.schedCancel != nil {
		b.schedCancel()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// record stores the outcome of a read that began at began, schedules the
// next, and logs a change of reachability once.
func (b *Bridge) record(a *agent, began time.Time, hello *wire.Hello, rd upstream.Read, err error) {
	b.mu.Lock()
	a.reading, a.stopRead = false, nil
	if a.ctx.Err() != nil {
		b.mu.Unlock()
		return // detached meanwhile
	}
	var cut *upstream.WaitCut
	if errors.As(err, &cut) {
		b.reschedule(a, began, rd, err)
		// Not the agent's fault, as far as anyone can tell: the status
		// stays; the next read, no sooner than K8 allows, says more.
		a.status.Mode = b.mode(a)
		wait := a.wait
		b.mu.Unlock()
		b.o.Log.Info("a waiting read was cut short (a proxy's read timeout, or the agent restarted)", "agent", a.src.Name, "held", cut.Held.Round(time.Second).String(), "next_wait", wait.String())
		return
	}
	b.apply(a, began, hello, rd, err, true)
}

// apply stores the outcome of a read that began at began (b.mu held; it
// unlocks it), schedules the next read when resched is set, tells the
// device API, and logs a change of reachability once.
func (b *Bridge) apply(a *agent, began time.Time, hello *wire.Hello, rd upstream.Read, err error, resched bool) {
	log := b.o.Log.With("agent", a.src.Name)
	before := a.status
	var asked []dispatch.Question
	if began.After(a.status.Checked) {
		a.status.Checked = began
	}
	close(a.polled)
	a.polled = make(chan struct{})
	if err != nil {
		a.status.Reachable, a.status.Reason, a.status.ReasonCode = false, reason(err), reasonCode(err)
		a.status.Agent = "" // ask hello again when it comes back
		a.snap, a.line, a.etag = nil, nil, ""
	} else {
		a.status.Reachable, a.status.Reason, a.status.ReasonCode = true, "", ""
		if hello != nil {
			a.status.Agent = hello.Agent
		}
		if !rd.NotModified {
			a.snap, a.line, a.etag = rd.Snapshot, rd.Lineage, rd.ETag
			if b.o.Push != nil {
				asked = b.newQuestions(a)
			}
		}
	}
	if resched {
		b.reschedule(a, began, rd, err)
	}
	a.status.Mode = b.mode(a)
	after := a.status
	b.mu.Unlock()

	if err == nil && !rd.NotModified {
		logDrops(log, rd.Report)
	}
	if !rd.NotModified || before.Reachable != after.Reachable {
		b.changed()
	}
	b.pushQuestions(asked) // after the devices were told: cards first
	if before.Reachable == after.Reachable && before.Reason == after.Reason {
		return
	}
	if after.Reachable {
		log.Info("durable agent is reachable", journald.MessageID(journald.MsgAgentReachable), "target", after.Target, "name", after.Agent)
	} else {
		log.Warn("durable agent is unreachable", journald.MessageID(journald.MsgAgentUnreachable), "target", after.Target, "reason", after.Reason)
	}
	b.o.Notify(b.statusLine())
}

// reason is the sentence shown for an unreachable agent. upstream cleans
// every error it returns; this cleans again, so that whatever else an error
// may one day carry, a reason stored here (and shown by collie durable
// list, collie show, the device API and the log) is clean (X1).
func reason(err error) string {
	var u *upstream.Unreachable
	if errors.As(err, &u) {
		return cleanReason(u.Reason)
	}
	return cleanReason(err.Error())
}

// reasonCode is the code of err for the status: the walk's or the peer
// check's own code when err is one of theirs.
func reasonCode(err error) string {
	var se *sockpath.Error
	var u *upstream.Unreachable
	switch {
	case errors.As(err, &se):
		return string(se.Code)
	case errors.As(err, &u) && u.Reason == upstream.ReasonTokenRefused:
		return "token-refused"
	}
	return "unreachable"
}

// cleanReason cleans a reason as X2 cleans a single-line field, capped
// like upstream's.
func cleanReason(s string) string {
	s, _ = sanitize.Line(s, upstream.ReasonBytes)
	return s
}

// logDrops writes one line per conversation for what cleaning dropped (X6).
func logDrops(log *slog.Logger, rep wire.Report) {
	byConv := map[string][]wire.Drop{}
	var order []string
	for _, d := range rep.Dropped {
		if _, ok := byConv[d.Conversation]; !ok {
			order = append(order, d.Conversation)
		}
		byConv[d.Conversation] = append(byConv[d.Conversation], d)
	}
	for _, conv := range order {
		ds := byConv[conv]
		log.Warn("dropped objects from the agent's snapshot", "conversation", conv, "count", len(ds), "first", cleanReason(ds[0].What+": "+ds[0].Reason))
	}
}

// changed tells the device API, and Options.Changed, that the view
// changed.
func (b *Bridge) changed() {
	if b.api != nil {
		b.api.Changed()
	}
	if b.o.Changed != nil {
		b.o.Changed()
	}
}

func (b *Bridge) statusLine() string {
	agents := b.Agents()
	up := 0
	for _, a := range agents {
		if a.Reachable {
			up++
		}
	}
	return systemd.Status(fmt.Sprintf("%d of %d durable agents reachable", up, len(agents)))
}
