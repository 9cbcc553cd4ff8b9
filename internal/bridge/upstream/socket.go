package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/collie-linux/collie/internal/linux/peercred"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// SocketTimeout bounds one request over the Unix socket, until the reply's
// headers, beyond any wait.
const SocketTimeout = 10 * time.Second

// NewSocket returns a client for the agent listening at path, for user uid.
//
// Its connections are kept alive between requests, yet the T2 walk runs
// before every request: a walk that fails closes every connection to the
// socket at once, kept or carrying a request, and the request fails with
// the walk's exact reason (T3, T4: unreachable at once, no grace). A walk
// that passes but ends at another socket than the one the connections were
// made to (a socket replaced at the same path) closes them too, and the
// request connects anew. The listener's uid (SO_PEERCRED, L3) is checked
// once per connection, when it is made.
func NewSocket(path string, uid int) Waiter {
	return newSocket(path, uid, peercred.SameUser)
}

// newSocket is NewSocket with the peer check given (tests count it).
func newSocket(path string, uid int, peer func(syscall.Conn, int) error) *reader {
	return &reader{
		base:    "http://agent",
		timeout: SocketTimeout,
		hc: &http.Client{
			Transport:     &socketTransport{path: path, uid: uid, peer: peer},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// socketTransport keeps connections to one agent's socket and walks its
// path before every request.
type socketTransport struct {
	path string
	uid  int
	peer func(syscall.Conn, int) error

	mu  sync.Mutex
	cur *socketPool // connections to the socket the last walk ended at
}

// socketPool is the connections to one socket, by its ID. Once closed it
// is never used again: the next request makes a new pool.
//
// It keeps at most one connection between requests, and only when no
// other request is under way: a request beside a held waiting read (a
// write, a check) connects anew and closes its connection when done, so
// an idle agent costs one descriptor.
type socketPool struct {
	id sockpath.ID

	mu    sync.Mutex
	conns map[*keptConn]struct{} // every open connection, busy or idle
	idle  *keptConn              // the kept connection no request uses
	busy  int                    // requests under way
	gone  error                  // why the pool was closed; nil while it is open
}

// RoundTrip walks the path, drops the kept connections when the walk
// fails or ends at another socket, and sends req over the kept connection
// or a new one to the socket the walk checked. A GET that fails on a kept
// connection before any reply (the agent closed it meanwhile) is sent once
// more over a new one.
func (s *socketTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, err := s.pool()
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		c, kept, err := s.conn(req.Context(), p)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		resp, err := c.exchange(req)
		if err == nil {
			return resp, nil
		}
		if why := p.closed(); why != nil {
			return nil, why
		}
		if !kept || attempt > 0 || req.Context().Err() != nil || (req.Method != http.MethodGet && req.Method != http.MethodHead) {
			return nil, err
		}
	}
}

// conn returns p's kept connection when it is still good, or a new one
// (walked and checked: see dial); kept says which.
func (s *socketTransport) conn(ctx context.Context, p *socketPool) (*keptConn, bool, error) {
	p.mu.Lock()
	if p.gone != nil {
		p.mu.Unlock()
		return nil, false, p.gone
	}
	c := p.idle
	p.idle = nil
	p.busy++ // from now on: no other request keeps its connection
	p.mu.Unlock()
	kept := c != nil && c.alive(time.Now())
	if c != nil && !kept {
		c.Close()
	}
	var err error
	if !kept {
		c, err = s.dial(ctx, p)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.busy--
		return nil, false, err
	}
	c.busy = true // c's Close or release ends the request
	return c, kept, nil
}

// pool runs the T2 walk and returns the pool for the socket it ends at.
func (s *socketTransport) pool() (*socketPool, error) {
	id, err := sockpath.Identify(s.path, s.uid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		u := &Unreachable{Reason: err.Error(), Err: err}
		if s.cur != nil {
			s.cur.close(u)
			s.cur = nil
		}
		return nil, u
	}
	if s.cur != nil && s.cur.id != id {
		s.cur.close(wire.NewCleanError(agentText("the socket at "+s.path+" was replaced by another; the next read connects to the new one"), nil))
		s.cur = nil
	}
	if s.cur == nil {
		s.cur = s.newPool(id)
	}
	return s.cur, nil
}

func (s *socketTransport) newPool(id sockpath.ID) *socketPool {
	return &socketPool{id: id, conns: map[*keptConn]struct{}{}}
}

// dial connects to exactly the socket a walk checked (sockpath.DialID),
// refuses it unless it is the socket of p, and then refuses a listener that
// is not ours: the peer check, once per connection (L3).
func (s *socketTransport) dial(ctx context.Context, p *socketPool) (*keptConn, error) {
	c, id, err := sockpath.DialID(ctx, s.path, s.uid)
	if err != nil {
		u := &Unreachable{Reason: err.Error(), Err: err}
		if se := (*sockpath.Error)(nil); !errors.As(err, &se) || !se.Connect {
			p.close(u) // the walk failed: this pool's socket is no longer there
		}
		return nil, u
	}
	if id != p.id {
		c.Close()
		err := wire.NewCleanError(agentText("the socket at "+s.path+" was replaced while Collie connected to it; the next read connects to the new one"), nil)
		p.close(err)
		return nil, err
	}
	// The peer of a socket-activated listener is the systemd user manager
	// that made it: only its uid means something.
	if err := s.peer(c, s.uid); err != nil {
		c.Close()
		le := sockpath.ListenerError(s.path, err)
		return nil, &Unreachable{Reason: le.Reason, Err: le}
	}
	kc := &keptConn{UnixConn: c, p: p}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone != nil {
		c.Close()
		return nil, p.gone
	}
	p.conns[kc] = struct{}{}
	return kc, nil
}

// CloseIdleConnections closes the connections no request is using.
func (s *socketTransport) CloseIdleConnections() {
	s.mu.Lock()
	p := s.cur
	s.mu.Unlock()
	if p != nil {
		p.closeIdle()
	}
}

// closeIdle closes the kept connection no request uses.
func (p *socketPool) closeIdle() {
	p.mu.Lock()
	c := p.idle
	p.idle = nil
	p.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

// close closes every connection of p, idle or carrying a request, and
// records why: a request cut by it fails with that error.
func (p *socketPool) close(why error) {
	p.mu.Lock()
	if p.gone != nil {
		p.mu.Unlock()
		return
	}
	p.gone = why
	conns := make([]*keptConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *socketPool) closed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}

// keptConn is one connection of a pool.
type keptConn struct {
	*net.UnixConn
	p         *socketPool
	idleSince time.Time // when it was last given back
	busy      bool      // counted in p.busy
}

// Close closes c and forgets it; a request it carried is no longer under way.
func (c *keptConn) Close() error {
	c.p.mu.Lock()
	delete(c.p.conns, c)
	if c.p.idle == c {
		c.p.idle = nil
	}
	if c.busy {
		c.busy = false
		c.p.busy--
	}
	c.p.mu.Unlock()
	return c.UnixConn.Close()
}

// release gives c back after a request that read its reply to the end:
// it is kept for the next request when no other request is under way and
// the pool is open, and closed otherwise.
func (c *keptConn) release() {
	p := c.p
	p.mu.Lock()
	if c.busy {
		c.busy = false
		p.busy--
	}
	keep := p.gone == nil && p.busy == 0 && p.idle == nil
	if keep {
		c.idleSince = time.Now()
		p.idle = c
	}
	p.mu.Unlock()
	if !keep {
		c.Close()
	}
}
