package device

import (
	"context"
	"sync"
)

// feed fans change notices out to the devices' event streams and knows how
// many are open, so the bridge can poll faster while someone looks (K8).
type feed struct {
	watching func(bool)

	mu      sync.Mutex
	streams map[*stream]struct{}
}

type stream struct {
	device string
	notify chan struct{}      // a change happened; coalesced
	cancel context.CancelFunc // ends the stream (revoke)
}

func newFeed(watching func(bool)) *feed {
	if watching == nil {
		watching = func(bool) {}
	}
	return &feed{watching: watching, streams: map[*stream]struct{}{}}
}

// open registers a stream for device until ctx ends or it is cut off.
func (f *feed) open(ctx context.Context, device string) (*stream, context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{device: device, notify: make(chan struct{}, 1), cancel: cancel}
	f.mu.Lock()
	f.streams[s] = struct{}{}
	n := len(f.streams)
	f.mu.Unlock()
	if n == 1 {
		f.watching(true)
	}
	return s, ctx, func() {
		cancel()
		f.mu.Lock()
		delete(f.streams, s)
		n := len(f.streams)
		f.mu.Unlock()
		if n == 0 {
			f.watching(false)
		}
	}
}

// changed tells every stream that the state changed.
func (f *feed) changed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.streams {
		select {
		case s.notify <- struct{}{}:
		default:
		}
	}
}

// cut ends every stream of device at once (revoke).
func (f *feed) cut(device string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.streams {
		if s.device == device {
			s.cancel()
		}
	}
}
