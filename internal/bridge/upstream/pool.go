package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// connPool is the connections to one agent endpoint (one socket, or one
// HTTPS host), which both transports keep alive between requests. Once
// closed it is never used again: the socket transport makes a new pool.
//
// It keeps at most one connection between requests, and only when no
// other request is under way: a request beside a held waiting read (a
// write, a check) connects anew and closes its connection when done, so
// an idle agent costs one descriptor.
type connPool struct {
	mu    sync.Mutex
	conns map[*keptConn]struct{} // every open connection, busy or idle
	idle  *keptConn              // the kept connection no request uses
	busy  int                    // requests under way
	gone  error                  // why the pool was closed; nil while it is open
}

func newPool() *connPool { return &connPool{conns: map[*keptConn]struct{}{}} }

// dialer makes a new connection for a pool, checked as its transport
// requires (the socket's walk and peer, the agent's certificate).
type dialer func(ctx context.Context) (net.Conn, error)

// send sends req over p's kept connection or a new one that dial makes,
// and returns its reply, whose body releases the connection (see
// exchange). A GET or HEAD that fails on a kept connection before any
// reply (the agent closed it meanwhile) is sent once more over a new one.
func (p *connPool) send(req *http.Request, dial dialer) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		c, kept, err := p.conn(req.Context(), dial)
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
// from dial; kept says which.
func (p *connPool) conn(ctx context.Context, dial dialer) (*keptConn, bool, error) {
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
	if !kept {
		nc, err := dial(ctx)
		if err == nil {
			c, err = p.add(nc)
		}
		if err != nil {
			p.mu.Lock()
			p.busy--
			p.mu.Unlock()
			return nil, false, err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c.busy = true // c's Close or release ends the request
	return c, kept, nil
}

// add makes nc one of p's connections, or closes it when p was closed
// meanwhile.
func (p *connPool) add(nc net.Conn) (*keptConn, error) {
	c := &keptConn{Conn: nc, p: p}
	under := nc
	if tc, ok := nc.(*tls.Conn); ok {
		under = tc.NetConn()
	}
	c.raw, _ = under.(syscall.Conn)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone != nil {
		nc.Close()
		return nil, p.gone
	}
	p.conns[c] = struct{}{}
	return c, nil
}

// closeIdle closes the kept connection no request uses.
func (p *connPool) closeIdle() {
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
func (p *connPool) close(why error) {
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

func (p *connPool) closed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}

// keptConn is one connection of a pool.
type keptConn struct {
	net.Conn
	// raw is the descriptor under Conn (the TCP connection under TLS),
	// for waits that hold no buffer; nil when there is none (an in-memory
	// connection in tests): then the connection is never reused.
	raw       syscall.Conn
	p         *connPool
	idleSince time.Time // when it was last given back
	busy      bool      // counted in p.busy
}

// drained reports whether c holds no bytes beyond the reply just read,
// which the next request would take as its reply. Bytes still on the
// socket are found before c is reused (alive); under TLS, bytes already
// decrypted are not on the socket, so they are looked for here, with a
// read that cannot wait.
func (c *keptConn) drained() bool {
	tc, ok := c.Conn.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetReadDeadline(time.Unix(1, 0))
	var one [1]byte
	n, err := tc.Read(one[:])
	tc.SetReadDeadline(time.Time{})
	return n == 0 && errors.Is(err, os.ErrDeadlineExceeded)
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
	return c.Conn.Close()
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
