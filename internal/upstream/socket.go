package upstream

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/collie-linux/collie/internal/peercred"
	"github.com/collie-linux/collie/internal/sockpath"
)

// socketDialer connects to an agent's Unix socket for user uid.
type socketDialer struct {
	path string
	uid  int
}

// NewSocket returns a client for the agent listening at path, for user uid.
func NewSocket(path string, uid int) Client {
	d := &socketDialer{path: path, uid: uid}
	return &reader{
		base: "http://agent",
		hc: &http.Client{
			Transport: &http.Transport{
				DialContext: d.dial,
				// A new connection for every request, so the walk runs before
				// each one (T2) and a path that turned unsafe is caught at once (T4).
				DisableKeepAlives:      true,
				MaxResponseHeaderBytes: 16 << 10,
				ResponseHeaderTimeout:  10 * time.Second,
			},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// dial runs the T2 walk and connects to exactly the socket it checked,
// then refuses a listener that is not ours.
func (s *socketDialer) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	c, err := sockpath.Dial(ctx, s.path, s.uid)
	if err != nil {
		return nil, &Unreachable{Reason: err.Error(), Err: err}
	}
	// The peer of a socket-activated listener is the systemd user manager
	// that made it: only its uid means something.
	if err := peercred.SameUser(c, s.uid); err != nil {
		c.Close()
		return nil, &Unreachable{Reason: fmt.Sprintf("the socket's listener is not you: %v", err), Err: err}
	}
	return c, nil
}
