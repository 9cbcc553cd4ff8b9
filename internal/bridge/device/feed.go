package device

import (
	"context"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"sync"
)

// feed knows every request a paired device has open: event streams, and
// the reads and writes in progress. It fans change notices out to the
// streams, tells the bridge whether any stream is open (K8), and cuts a
// device's requests off when it is revoked.
//
// Authenticating a request and registering it are one step under mu, and
// so are removing a device and cutting its requests (revoke): a request
// authenticated just before a revoke is registered before it and cut by
// it, and one that comes after finds the device gone. There is no moment
// between the two in which a revoke could miss it.
type feed struct {
	auth     func(cred string) (store.Device, bool) // the store's
	watching func(bool)

	mu      sync.Mutex
	conns   map[*conn]struct{}
	streams int // event streams among conns

	// report serialises calls of watching (a one-slot semaphore, a
	// channel so testing/synctest sees a waiter as blocked). Each change
	// of streams is followed by a report of the count as it is then, so
	// the last call always says what is true now: a stream that closes
	// while another opens cannot leave the bridge at the idle cadence
	// while a device is watching (K8).
	report   chan struct{}
	reported bool
}

// conn is one request of a device.
type conn struct {
	device string
	stream bool
	notify chan struct{}      // a change happened; coalesced (streams)
	cancel context.CancelFunc // ends the request (revoke)
}

func newFeed(auth func(string) (store.Device, bool), watching func(bool)) *feed {
	if watching == nil {
		watching = func(bool) {}
	}
	return &feed{auth: auth, watching: watching, conns: map[*conn]struct{}{}, report: make(chan struct{}, 1)}
}

// enter authenticates cred and registers the request in one step. The
// returned context ends when the device is revoked; leave unregisters.
func (f *feed) enter(ctx context.Context, cred string, stream bool) (store.Device, *conn, context.Context, func(), bool) {
	ctx, cancel := context.WithCancel(ctx)
	f.mu.Lock()
	d, ok := f.auth(cred)
	if !ok {
		f.mu.Unlock()
		cancel()
		return store.Device{}, nil, nil, nil, false
	}
	c := &conn{device: d.ID, stream: stream, notify: make(chan struct{}, 1), cancel: cancel}
	f.conns[c] = struct{}{}
	if stream {
		f.streams++
	}
	f.mu.Unlock()
	if stream {
		f.reconcile()
	}
	var once sync.Once
	return d, c, ctx, func() { once.Do(func() { f.leave(c) }) }, true
}

func (f *feed) leave(c *conn) {
	c.cancel()
	f.mu.Lock()
	delete(f.conns, c)
	if c.stream {
		f.streams--
	}
	f.mu.Unlock()
	if c.stream {
		f.reconcile()
	}
}

// reconcile tells the bridge whether a stream is open, when that changed
// since it was last told.
func (f *feed) reconcile() {
	f.report <- struct{}{}
	defer func() { <-f.report }()
	f.mu.Lock()
	on := f.streams > 0
	f.mu.Unlock()
	if on != f.reported {
		f.reported = on
		f.watching(on)
	}
}

// changed tells every stream that the state changed.
func (f *feed) changed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		if !c.stream {
			continue
		}
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// revoke runs remove (the store's revoke) and ends every open request of
// device, as one step with respect to enter.
func (f *feed) revoke(device string, remove func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := remove(); err != nil {
		return err
	}
	for c := range f.conns {
		if c.device == device {
			c.cancel()
		}
	}
	return nil
}

// open counts the requests device has registered, for tests.
func (f *feed) open(device string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for c := range f.conns {
		if c.device == device {
			n++
		}
	}
	return n
}
