package bridge

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/bridge/upstream"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/memnet"
)

// A real durable agent (durable.Server: its waiting reads, its timers) on
// in-memory connections, for the bridge's scheduler inside a
// testing/synctest bubble, where a real socket's reads would not count as
// durably blocked. Requests are counted at the agent.

// memAgent is a durable.Server served on a memnet.Listener.
type memAgent struct {
	srv      *durable.Server
	l        *memnet.Listener
	hs       *http.Server
	requests atomic.Int64 // requests that reached the agent
	token    atomic.Value // string: the token the bridge sends; "" for the socket
}

// agentOptions shape a memAgent.
type agentOptions struct {
	remote  bool                            // the token transport (K7): the agent requires a bearer token
	ignores bool                            // an agent that does not know waiting reads
	front   func(http.Handler) http.Handler // between the bridge and the agent (a proxy)
}

const memToken = "mem-token-0123456789abcdef0123456789abcdef"

// startMemAgent serves a real durable agent in memory until the test ends.
func startMemAgent(t *testing.T, o agentOptions) *memAgent {
	t.Helper()
	srv, err := durable.NewServer(wire.Hello{Agent: "mem"}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	setTitle(t, srv, "one")
	m := &memAgent{srv: srv, l: memnet.New()}
	m.l.DialClosed = &upstream.Unreachable{Reason: "no socket at mem"}
	h := srv.Handler()
	if o.remote {
		m.token.Store(memToken)
		h = durable.RequireToken(durable.Tokens{Current: memToken}, h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		if o.ignores {
			r.Header.Del(wire.WaitHeader) // an agent without waiting reads
		}
		inner.ServeHTTP(w, r)
	})
	if o.front != nil {
		h = o.front(h)
	}
	// The agent's own timeouts (durable.ServeTransport's): a held read
	// must outlive them.
	m.hs = &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second}
	go m.hs.Serve(m.l)
	t.Cleanup(func() { m.hs.Close() })
	return m
}

func setTitle(t *testing.T, srv *durable.Server, title string) {
	t.Helper()
	if err := srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: title, Tabs: []wire.Tab{}}}}); err != nil {
		t.Fatal(err)
	}
}

// client is a bridge-side client of m: the protocol's reads as upstream
// sends and judges them, over m's in-memory connections.
func (m *memAgent) client() *memClient {
	return &memClient{m: m, hc: &http.Client{Transport: &http.Transport{DialContext: m.l.DialContext}}}
}

// memClient implements upstream.Waiter over a memAgent. It judges answers
// as upstream's reader does: a 304 marked Collie-Waited that came before
// 9/10 of its wait is not a waiting read; a 502, 503 or 504 after at least
// a second held is a *upstream.WaitCut.
type memClient struct {
	m  *memAgent
	hc *http.Client
}

func (c *memClient) get(ctx context.Context, path, etag string, secs int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://agent"+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(wire.VersionHeader, strconv.Itoa(wire.Version))
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if secs > 0 {
		req.Header.Set(wire.WaitHeader, strconv.Itoa(secs))
	}
	if tok, _ := c.m.token.Load().(string); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		if held := time.Since(sent); secs > 0 && held >= time.Second && ctx.Err() == nil {
			return nil, &upstream.WaitCut{Held: held, Err: err} // a dropped connection
		}
		return nil, &upstream.Unreachable{Reason: "the agent is not there", Err: err}
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, &upstream.Unreachable{Reason: upstream.ReasonTokenRefused}
	}
	return resp, nil
}

func (c *memClient) Hello(ctx context.Context) (*wire.Hello, error) {
	resp, err := c.get(ctx, wire.HelloPath, "", 0)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return wire.DecodeHello(resp.Body, resp.ContentLength)
}

func (c *memClient) Snapshot(ctx context.Context, etag string) (upstream.Read, error) {
	return c.SnapshotWait(ctx, etag, 0)
}

func (c *memClient) SnapshotWait(ctx context.Context, etag string, wait time.Duration) (upstream.Read, error) {
	secs := 0
	if wait > 0 {
		secs = int(min((wait+time.Second-1)/time.Second, wire.MaxWait))
	}
	sent := time.Now()
	resp, err := c.get(ctx, wire.SnapshotPath, etag, secs)
	if err != nil {
		return upstream.Read{}, err
	}
	defer resp.Body.Close()
	applied, waited := wire.ParseWait(resp.Header.Get(wire.WaitedHeader))
	waited = waited && secs > 0 && applied <= secs
	switch resp.StatusCode {
	case http.StatusNotModified:
		if time.Since(sent) < time.Duration(applied)*time.Second*9/10 {
			waited = false
		}
		return upstream.Read{ETag: etag, NotModified: true, Waited: waited}, nil
	case http.StatusOK:
		snap, rep, err := wire.DecodeSnapshot(resp.Body, resp.ContentLength)
		if err != nil {
			return upstream.Read{}, err
		}
		return upstream.Read{Snapshot: snap, Report: rep, ETag: resp.Header.Get("ETag"), Waited: waited}, nil
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if held := time.Since(sent); secs > 0 && held >= time.Second {
			return upstream.Read{}, &upstream.WaitCut{Held: held, Err: fmt.Errorf("the agent answered %d", resp.StatusCode)}
		}
	}
	return upstream.Read{}, fmt.Errorf("the agent answered %d", resp.StatusCode)
}

func (c *memClient) Write(context.Context, string, wire.WriteRequest) (*wire.WriteReply, error) {
	return nil, fmt.Errorf("not in this test")
}

func (c *memClient) Close() { c.hc.CloseIdleConnections() }
