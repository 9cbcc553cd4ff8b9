// Package bridge is the collie daemon: it polls each attached durable agent,
// keeps what they show after cleaning, and serves it to the collie command.
package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/collie-linux/collie/internal/config"
	"github.com/collie-linux/collie/internal/control"
	"github.com/collie-linux/collie/internal/device"
	"github.com/collie-linux/collie/internal/sanitize"
	"github.com/collie-linux/collie/internal/sources"
	"github.com/collie-linux/collie/internal/systemd/journald"
	"github.com/collie-linux/collie/internal/upstream"
	"github.com/collie-linux/collie/internal/view"
	"github.com/collie-linux/collie/internal/wire"
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
	// Fresh overrides the package's Fresh (tests).
	Fresh time.Duration
	// Devices is where the device API listens; nil turns it off.
	Devices *device.ListenConfig
	// Audit records every write a device asks for (A1); nil: none.
	Audit device.Recorder
}

// Bridge holds the attached agents and their pollers.
type Bridge struct {
	o   Options
	ctx context.Context // set by Run; pollers live under it

	watching atomic.Bool // a device is looking (K8)

	mu     sync.Mutex
	agents map[string]*agent

	// The device API, when it is on.
	devices  *device.Store
	pairings *device.Pairings
	api      *device.API
	apiURL   string
	apiFP    string
}

// agent is one attached durable agent and what was last read from it.
type agent struct {
	src    sources.Source
	client upstream.Client
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // poll now: a device started looking, or wrote

	// Guarded by Bridge.mu.
	status view.AgentStatus
	snap   *wire.Snapshot
	etag   string
	polled chan struct{} // closed and replaced after each poll; nil: never polled
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
	return &Bridge{o: o, agents: map[string]*agent{}}
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
	b.o.Notify("READY=1\n" + b.statusLine())
	err = control.Serve(ctx, l, b, b.o.Log)
	b.o.Notify("STOPPING=1")
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
		// Pollers live under Run's context (a SIGHUP before Run, issue 9).
		return errors.New("the bridge is not running yet; reload once it has started")
	}
	for name, a := range b.agents {
		if s, ok := want[name]; !ok || s != a.src {
			a.cancel()
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

// start begins polling s. Callers hold b.mu.
func (b *Bridge) start(s sources.Source) {
	ctx, cancel := context.WithCancel(b.ctx)
	a := &agent{
		src:    s,
		cancel: cancel,
		done:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		status: view.AgentStatus{Name: s.Name, Transport: s.Transport(), Target: s.Socket, Reason: "not polled yet"},
		polled: make(chan struct{}),
	}
	var err error
	switch {
	case s.Refused != "":
		// sources.Load refused its socket path (T2): never dialled.
		err = errors.New(s.Refused)
	case s.Transport() == "socket":
		a.client = upstream.NewSocket(s.Socket, b.o.UID)
	default:
		a.status.Target, a.status.TokenSet = s.URL, s.Token != ""
		a.client, err = upstream.NewHTTPS(s.URL, s.Token, upstream.HTTPSOptions{CAFile: s.CAFile})
	}
	b.agents[s.Name] = a
	if err != nil {
		// Kept in the list with its reason, not polled until it is fixed.
		a.status.Reason, a.polled = cleanReason(err.Error()), nil
		b.o.Log.Warn("durable agent is unreachable", journald.MessageID(journald.MsgAgentUnreachable), "agent", s.Name, "reason", a.status.Reason)
		cancel()
		close(a.done)
		return
	}
	go b.poll(ctx, a)
}

// SetWatching says whether a device is looking. While one is, reachable
// agents are polled every 2 s instead of 10 s, starting now (K8).
func (b *Bridge) SetWatching(on bool) {
	if b.watching.Swap(on) == on || !on {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.agents {
		if !a.status.Reachable {
			continue // down or refusing the token: stays at the idle cadence
		}
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// next is how long a waits before its next poll (K8).
func (b *Bridge) next(a *agent) time.Duration {
	b.mu.Lock()
	up := a.status.Reachable
	b.mu.Unlock()
	if up && b.watching.Load() {
		return b.o.Active
	}
	return b.o.Interval
}

func (b *Bridge) stopAll() {
	b.mu.Lock()
	var done []chan struct{}
	for _, a := range b.agents {
		a.cancel()
		done = append(done, a.done)
	}
	b.mu.Unlock()
	for _, d := range done {
		<-d
	}
}

// poll reads a at once and then on its cadence until ctx ends.
func (b *Bridge) poll(ctx context.Context, a *agent) {
	defer close(a.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.wake:
		}
		b.pollOnce(ctx, a)
		t.Reset(b.next(a))
	}
}

func (b *Bridge) pollOnce(parent context.Context, a *agent) {
	ctx, cancel := context.WithTimeout(parent, pollTimeout)
	defer cancel()
	began := time.Now()
	b.mu.Lock()
	etag, name := a.etag, a.status.Agent
	b.mu.Unlock()

	var hello *wire.Hello
	var err error
	if name == "" {
		hello, err = a.client.Hello(ctx)
	}
	var rd upstream.Read
	if err == nil {
		rd, err = a.client.Snapshot(ctx, etag)
	}
	if parent.Err() != nil {
		return // detached or stopping: the outcome means nothing
	}
	b.record(a, began, hello, rd, err)
}

// record stores the outcome of a poll that began at began, and logs a
// change of reachability once.
func (b *Bridge) record(a *agent, began time.Time, hello *wire.Hello, rd upstream.Read, err error) {
	log := b.o.Log.With("agent", a.src.Name)
	b.mu.Lock()
	before := a.status
	a.status.Checked = began
	close(a.polled)
	a.polled = make(chan struct{})
	if err != nil {
		a.status.Reachable, a.status.Reason = false, reason(err)
		a.status.Agent = "" // ask hello again when it comes back
		a.snap, a.etag = nil, ""
	} else {
		a.status.Reachable, a.status.Reason = true, ""
		if hello != nil {
			a.status.Agent = hello.Agent
		}
		if !rd.NotModified {
			a.snap, a.etag = rd.Snapshot, rd.ETag
		}
	}
	after := a.status
	b.mu.Unlock()

	if err == nil && !rd.NotModified {
		logDrops(log, rd.Report)
	}
	if b.api != nil && (!rd.NotModified || before.Reachable != after.Reachable) {
		b.api.Changed()
	}
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

func (b *Bridge) statusLine() string {
	agents := b.Agents()
	up := 0
	for _, a := range agents {
		if a.Reachable {
			up++
		}
	}
	return fmt.Sprintf("STATUS=%d of %d durable agents reachable", up, len(agents))
}

// Agents implements control.Backend.
func (b *Bridge) Agents() []view.AgentStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]view.AgentStatus, 0, len(b.agents))
	for _, a := range b.agents {
		out = append(out, a.status)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Fresh is how recent a status must be for Check to take it as it is;
// an older one is polled again.
const Fresh = time.Second

// checkWait bounds how long Check waits for the polls it asked for.
const checkWait = 5 * time.Second

// Check implements control.Backend: it polls now every agent whose status
// is older than Fresh and waits (up to 5 s, or ctx) for those polls, so
// that collie durable list shows what is true now, not up to 10 s ago.
// An agent that is down is polled too: the user asked. A poll still
// running when the wait ends leaves that agent's status as it was, with
// its Checked time saying how old it is.
func (b *Bridge) Check(ctx context.Context) []view.AgentStatus {
	since := time.Now().Add(-b.o.Fresh)
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	b.mu.Lock()
	var waits []*agent
	for _, a := range b.agents {
		if a.polled == nil || !a.status.Checked.Before(since) {
			continue // never polled (its reason is its settings), or fresh
		}
		waits = append(waits, a)
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	for _, a := range waits {
		b.waitPolled(ctx, a, since)
	}
	return b.Agents()
}

// waitPolled waits until a poll of a that began after since is recorded,
// ctx ends or a stops.
func (b *Bridge) waitPolled(ctx context.Context, a *agent, since time.Time) {
	for {
		b.mu.Lock()
		fresh, polled := a.status.Checked.After(since), a.polled
		b.mu.Unlock()
		if fresh {
			return
		}
		select {
		case <-polled:
		case <-a.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

// View implements control.Backend.
func (b *Bridge) View() []view.Agent {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]view.Agent, 0, len(b.agents))
	for _, a := range b.agents {
		out = append(out, view.Agent{AgentStatus: a.status, Snapshot: a.snap})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
