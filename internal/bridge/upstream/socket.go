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

// socketPool is the connections to one socket, by its ID.
type socketPool struct {
	id sockpath.ID
	*connPool
}

// RoundTrip walks the path, drops the kept connections when the walk
// fails or ends at another socket, and sends req over the kept connection
// or a new one to the socket the walk checked (see connPool.send).
func (s *socketTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p, err := s.pool()
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return p.send(req, func(ctx context.Context) (net.Conn, error) { return s.dial(ctx, p) })
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
		s.cur = &socketPool{id: id, connPool: newPool()}
	}
	return s.cur, nil
}

// dial connects to exactly the socket a walk checked (sockpath.DialID),
// refuses it unless it is the socket of p, and then refuses a listener that
// is not ours: the peer check, once per connection (L3).
func (s *socketTransport) dial(ctx context.Context, p *socketPool) (net.Conn, error) {
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
	return c, nil
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
