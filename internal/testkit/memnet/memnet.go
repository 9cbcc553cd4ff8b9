// Package memnet is an in-memory net.Listener for tests that serve HTTP
// inside a testing/synctest bubble: its connections are net.Pipe pairs,
// whose reads block durably and whose deadlines run on the bubble's
// clock, so a server's real timeouts can be used where a real socket's
// reads would not count as blocked.
package memnet

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// Listener hands out the server ends of the pipes DialContext makes.
type Listener struct {
	// DialClosed is what DialContext returns once the listener is closed;
	// net.ErrClosed when nil.
	DialClosed error

	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	dials  atomic.Int64
}

// New returns an open listener.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

// Accept waits for a connection from DialContext.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close stops Accept and DialContext; connections made stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

// Addr names no address.
func (l *Listener) Addr() net.Addr { return addr{} }

// Dials counts the connections asked for, refused ones included.
func (l *Listener) Dials() int64 { return l.dials.Load() }

// DialContext connects to l; it fits http.Transport.DialContext.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	l.dials.Add(1)
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		client.Close()
		server.Close()
		if l.DialClosed != nil {
			return nil, l.DialClosed
		}
		return nil, net.ErrClosed
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
}

type addr struct{}

func (addr) Network() string { return "mem" }
func (addr) String() string  { return "mem" }
