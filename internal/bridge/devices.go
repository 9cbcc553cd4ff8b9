package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	neturl "net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// errDevicesOff is what pairing says when the device API is off.
var errDevicesOff = errors.New("the device API is off; set listen in [devices] of config.toml (see collie.toml(5))")

// startDevices opens the device API when it is configured, and returns
// what stops it.
func (b *Bridge) startDevices(ctx context.Context) (func(), error) {
	if b.o.Devices == nil {
		return func() {}, nil
	}
	st, err := store.OpenStore(filepath.Join(b.o.Paths.State, "devices.json"), nil)
	if err != nil {
		return nil, err
	}
	l, err := device.Listen(*b.o.Devices, b.o.Paths.State)
	if err != nil {
		// The agents and the command line still work; say what to fix.
		b.o.Log.Error("the device API is off: "+err.Error(), "listen", b.o.Devices.Addr)
		return func() {}, nil
	}
	b.devices, b.pairings = st, store.NewPairings(nil)
	webPushKey := ""
	if wp := b.o.WebPush; wp != nil {
		wp.SetSubscriptions(st) // revoking a device drops its subscription
		webPushKey = wp.PublicKey()
	}
	b.apiURL, b.apiFP, b.apiReach = linkOf(l)
	b.api = device.NewAPI(device.Options{Backend: b, Store: st, Pairings: b.pairings, Audit: b.o.Audit, Log: b.o.Log, Site: l.Site, WebPushKey: webPushKey,
		Agents: b.agentService()})
	b.web.Store(b.apiURL + "/")
	srv := &http.Server{Handler: b.api.Handler(), ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	go srv.Serve(l)
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		srv.Close()   // event streams do not end by themselves
		b.api.Close() // the counts of refusals still being coalesced, before the audit log closes
		if b.host != nil {
			b.host.Close()
		}
	}, nil
}

// Forward implements device.Backend: it sends a device's write to an
// agent, then reads that agent at once so the device sees the outcome.
func (b *Bridge) Forward(ctx context.Context, name, path string, req wire.WriteRequest) (*wire.WriteReply, error) {
	b.mu.Lock()
	a, ok := b.agents[name]
	b.mu.Unlock()
	if !ok || a.client == nil {
		return nil, device.ErrUnknownAgent
	}
	reply, err := a.client.Write(ctx, path, req)
	// A held waiting read answers the change by itself; any other agent
	// is read at once.
	b.mu.Lock()
	b.readNow(a)
	b.mu.Unlock()
	return reply, err
}

// Pair implements control.Backend.
func (b *Bridge) Pair() (control.Pairing, error) {
	if b.pairings == nil {
		return control.Pairing{}, errDevicesOff
	}
	p, err := b.pairings.New()
	if err != nil {
		return control.Pairing{}, fmt.Errorf("make a pairing secret: %w", err)
	}
	// The secret rides in the fragment, which a browser never sends to a server.
	return control.Pairing{URL: b.apiURL + "/#pair=" + p.Secret, Code: p.Code, Expires: p.Expires, Fingerprint: b.apiFP, Reach: b.apiReach}, nil
}

// linkOf is the address pairing links and pushes use: public_url when it
// is set (the phone's address: the listener's certificate fingerprint
// means nothing there, a proxy's certificate is what the phone sees),
// else the listener's own; and who can open it.
func linkOf(l *device.Listener) (url, fingerprint, reach string) {
	if l.Public != "" {
		reach = control.ReachPublic
		if u, err := neturl.Parse(l.Public); err == nil && isLoopbackName(u.Hostname()) {
			reach = control.ReachThisMachine
		}
		return l.Public, "", reach
	}
	reach = control.ReachNetwork
	if u, err := neturl.Parse(l.URL); err == nil && isLoopbackName(u.Hostname()) {
		reach = control.ReachThisMachine
	}
	return l.URL, l.Fingerprint, reach
}

func isLoopbackName(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// Devices implements control.Backend.
func (b *Bridge) Devices() ([]control.Device, error) {
	if b.devices == nil {
		return nil, errDevicesOff
	}
	out := []control.Device{} // no devices is [], not null
	for _, d := range b.devices.List() {
		out = append(out, control.Device{ID: d.ID, Name: d.Name, PairedAt: d.PairedAt, LastSeen: d.LastSeen})
	}
	return out, nil
}

// Revoke implements control.Backend.
func (b *Bridge) Revoke(id string) error {
	if b.api == nil {
		return errDevicesOff
	}
	if err := b.api.Revoke(id); err != nil {
		return err
	}
	b.o.Log.Warn("a device was revoked: it can no longer read or answer", "device", id)
	return nil
}
