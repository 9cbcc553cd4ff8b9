// Package control is the daemon's local API for the collie command: JSON
// over HTTP on $XDG_RUNTIME_DIR/collie/control.sock, open only to the
// daemon's own user (L3), checked from both ends.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/linux/peercred"
	"github.com/collie-linux/collie/internal/linux/privsock"
	"github.com/collie-linux/collie/internal/linux/sockpath"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Pairing is what `collie pair` shows: a single-use offer to pair a device.
type Pairing struct {
	URL         string    `json:"url"` // carries the secret in its fragment
	Code        string    `json:"code"`
	Expires     time.Time `json:"expires"`
	Fingerprint string    `json:"fingerprint,omitempty"` // of the bridge's TLS certificate
	// Reach says who can open URL: ReachPublic, ReachThisMachine or
	// ReachNetwork.
	Reach string `json:"reach"`
}

// Reaches of a pairing link.
const (
	// ReachPublic: URL is [devices] public_url, the https:// address
	// phones open.
	ReachPublic = "public"
	// ReachThisMachine: URL is a loopback address; only a browser on this
	// machine can open it.
	ReachThisMachine = "this-machine"
	// ReachNetwork: URL is the listener's own, beyond loopback, under the
	// bridge's self-signed certificate unless tls_cert is set.
	ReachNetwork = "network"
)

// Device is a paired device as `collie devices` lists it.
type Device struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	PairedAt time.Time `json:"pairedAt"`
	LastSeen time.Time `json:"lastSeen,omitzero"`
}

// Backend is what the daemon offers over the control socket.
type Backend interface {
	Agents() []view.AgentStatus
	// Check polls the agents now and returns their statuses; one whose
	// poll did not end in time keeps its last status and its Checked time.
	Check(ctx context.Context) []view.AgentStatus
	View() []view.Agent
	Reload() error
	Pair() (Pairing, error)
	Devices() ([]Device, error)
	Revoke(id string) error
}

// Paths of the control API.
const (
	agentsPath  = "/v1/agents"
	showPath    = "/v1/show"
	reloadPath  = "/v1/reload"
	pairPath    = "/v1/pair"
	devicesPath = "/v1/devices"
	revokePath  = "/v1/devices/revoke"
)

// Listen makes the private control socket at path (T5). A connection from
// another user is closed before a byte is read, with a log line (L3).
func Listen(path string, log *slog.Logger) (net.Listener, error) {
	l, err := privsock.Listen(path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	return peercred.Listener(l, os.Getuid(), func(c peercred.Cred, err error) {
		log.Warn("refused a control connection from another user", journald.MessageID(journald.MsgControlRefused), "pid", c.PID, "uid", c.UID, "err", err)
	}), nil
}

// Serve serves b on l until ctx ends.
func Serve(ctx context.Context, l net.Listener, b Backend, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+agentsPath, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("check") == "now" {
			writeJSON(w, http.StatusOK, b.Check(r.Context()))
			return
		}
		writeJSON(w, http.StatusOK, b.Agents())
	})
	mux.HandleFunc("GET "+showPath, func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, b.View()) })
	mux.HandleFunc("POST "+reloadPath, func(w http.ResponseWriter, _ *http.Request) {
		if err := b.Reload(); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, struct{}{})
	})
	mux.HandleFunc("POST "+pairPath, func(w http.ResponseWriter, _ *http.Request) {
		p, err := b.Pair()
		reply(w, p, err)
	})
	mux.HandleFunc("GET "+devicesPath, func(w http.ResponseWriter, _ *http.Request) {
		d, err := b.Devices()
		reply(w, d, err)
	})
	mux.HandleFunc("POST "+revokePath, func(w http.ResponseWriter, r *http.Request) {
		if id, ok := readID(w, r); ok {
			reply(w, struct{}{}, b.Revoke(id))
		}
	})
	servePush(mux, b)
	serveAgents(mux, b)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("control socket: %w", err)
	}
	return nil
}

// idBodyCap is the largest body readID reads.
const idBodyCap = 4096

// readID reads a revoke's body, {"id": ID}, or answers why it cannot: 413
// for a body over idBodyCap, 400 for any other fault.
func readID(w http.ResponseWriter, r *http.Request) (string, bool) {
	var req struct {
		ID string `json:"id"`
	}
	data, err := wire.ReadCapped(r.Body, r.ContentLength, idBodyCap)
	if errors.Is(err, wire.ErrTooLarge) {
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{Error: fmt.Sprintf("the request is larger than %d bytes; send less", idBodyCap)})
		return "", false
	}
	if err == nil {
		err = jsonstrict.Unmarshal(data, &req)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{Error: "the request is not the JSON this route takes: " + err.Error()})
		return "", false
	}
	return req.ID, true
}

func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// controlReplyCap bounds a reply read from the control socket: the list of
// agents and devices, far below it.
const controlReplyCap = 16 << 20

type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// ErrNotRunning means nothing answers on the control socket.
var ErrNotRunning = errors.New("the collie daemon is not running; start it with: systemctl --user start collie (or run: collie daemon)")

// Client talks to a running daemon.
type Client struct {
	hc *http.Client
}

// NewClient returns a client for the control socket at path. Before every
// connection it walks the path (T2) and checks the daemon runs as this user.
func NewClient(path string) *Client {
	uid := os.Getuid()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		// Dial connects to exactly the socket the walk checked (T2).
		c, err := sockpath.Dial(ctx, path, uid)
		if err != nil {
			var se *sockpath.Error
			if errors.As(err, &se) && (se.NoSocket || se.Connect) {
				return nil, ErrNotRunning
			}
			return nil, fmt.Errorf("the control socket is not private: %w", err)
		}
		if err := peercred.SameUser(c, uid); err != nil {
			c.Close()
			return nil, fmt.Errorf("the control socket %s is not served by you: %w", path, err)
		}
		return c, nil
	}
	return &Client{hc: &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
		Timeout:   15 * time.Second,
	}}
}

// Agents lists the attached agents and whether each is reachable.
func (c *Client) Agents(ctx context.Context) ([]view.AgentStatus, error) {
	var out []view.AgentStatus
	return out, c.do(ctx, http.MethodGet, agentsPath, &out)
}

// Check asks the daemon to poll every agent now and lists what it found
// (a status shown by collie durable list is not up to 10 s old).
func (c *Client) Check(ctx context.Context) ([]view.AgentStatus, error) {
	var out []view.AgentStatus
	return out, c.do(ctx, http.MethodGet, agentsPath+"?check=now", &out)
}

// View returns what the bridge holds.
func (c *Client) View(ctx context.Context) ([]view.Agent, error) {
	var out []view.Agent
	return out, c.do(ctx, http.MethodGet, showPath, &out)
}

// Reload asks the daemon to read sources.json again.
func (c *Client) Reload(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, reloadPath, nil)
}

// Pair asks the daemon for a new pairing offer.
func (c *Client) Pair(ctx context.Context) (Pairing, error) {
	var p Pairing
	return p, c.do(ctx, http.MethodPost, pairPath, &p)
}

// Devices lists the paired devices.
func (c *Client) Devices(ctx context.Context) ([]Device, error) {
	var d []Device
	return d, c.do(ctx, http.MethodGet, devicesPath, &d)
}

// Revoke cuts a device off at once.
func (c *Client) Revoke(ctx context.Context, id string) error {
	body, _ := json.Marshal(map[string]string{"id": id})
	return c.doBody(ctx, http.MethodPost, revokePath, body, nil)
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.doBody(ctx, method, path, nil, out)
}

func (c *Client) doBody(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://collie"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			if inner := ue.Unwrap(); inner != nil {
				err = inner
			}
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiError
		if data, err := wire.ReadCapped(resp.Body, resp.ContentLength, wire.ReplyCap); err != nil || jsonstrict.Unmarshal(data, &e) != nil {
			e.Error = ""
		}
		if e.Error == "" {
			e.Error = resp.Status
		}
		return fmt.Errorf("the daemon refused: %s", e.Error)
	}
	if out == nil {
		return nil
	}
	data, err := wire.ReadCapped(resp.Body, resp.ContentLength, controlReplyCap)
	if err == nil {
		err = jsonstrict.Unmarshal(data, out)
	}
	if err != nil {
		return fmt.Errorf("read the daemon's reply: %w", err)
	}
	return nil
}
