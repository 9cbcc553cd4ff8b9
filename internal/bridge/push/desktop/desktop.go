// Package desktop shows pushes as desktop notifications over the user's
// session bus (org.freedesktop.Notifications, the Desktop Notifications
// Specification). A notification only informs: its one action, "Open
// Collie", opens the web app in the user's browser, and nothing in this
// package answers a question (D6).
//
// The notification server may draw a subset of HTML in the body
// ("body-markup"): when it says so, the body's &, < and > are escaped, so
// agent text is drawn as text (X6). An ActionInvoked signal is acted on
// only when it comes from the bus name that owns
// org.freedesktop.Notifications and names a notification this provider
// showed; the URL opened is the one it stored, never one from the signal.
package desktop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/collie-linux/collie/internal/bridge/push"
)

// Name is the provider's name in config.toml, logs and doctor.
const Name = "desktop"

// The notification server's bus name, object and interface.
const (
	BusName   = "org.freedesktop.Notifications"
	Path      = dbus.ObjectPath("/org/freedesktop/Notifications")
	Interface = "org.freedesktop.Notifications"
)

// openAction is the key of the one action: "default" is what a click on
// the notification itself invokes.
const openAction = "default"

// remembered bounds the notifications whose action is still honoured.
const remembered = 256

// SessionAddress returns the session bus's address: DBUS_SESSION_BUS_ADDRESS,
// or $XDG_RUNTIME_DIR/bus when it is a socket. It never starts a bus.
func SessionAddress(getenv func(string) string) (string, error) {
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" {
		return a, nil
	}
	if run := getenv("XDG_RUNTIME_DIR"); run != "" {
		p := filepath.Join(run, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode().Type() == os.ModeSocket {
			return "unix:path=" + p, nil
		}
	}
	return "", errors.New("there is no session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is not a socket)")
}

// Options configure a Provider.
type Options struct {
	// Address is the session bus's address (SessionAddress).
	Address string
	// Open opens a URL in the user's browser; nil asks the desktop portal
	// (org.freedesktop.portal.OpenURI, on the same bus), and runs xdg-open
	// where there is none.
	Open func(url string) error
	Log  *slog.Logger

	// handled, when set, is called after each signal is acted on (tests).
	handled func(*dbus.Signal)
}

// Provider shows notifications on one session bus.
type Provider struct {
	conn    *dbus.Conn
	obj     dbus.BusObject
	open    func(string) error
	log     *slog.Logger
	handled func(*dbus.Signal)
	markup  bool // the server draws markup in the body
	sigs    chan *dbus.Signal
	done    chan struct{}

	mu    sync.Mutex
	urls  map[uint32]string // notification id → the URL its action opens
	order []uint32
}

// New connects to the session bus and checks that a notification server
// is there (it owns org.freedesktop.Notifications, or the bus can start
// one). Close it when done.
func New(ctx context.Context, o Options) (*Provider, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	// Not dbus.WithContext(ctx): that would close the connection when the
	// start-up's ctx ends. ctx bounds the calls below.
	conn, err := dbus.Connect(o.Address)
	if err != nil {
		return nil, fmt.Errorf("connect to the session bus: %w", err)
	}
	p := &Provider{conn: conn, obj: conn.Object(BusName, Path), open: o.Open, log: o.Log, handled: o.handled, urls: map[uint32]string{}, done: make(chan struct{})}
	if p.open == nil {
		p.open = p.openURI
	}
	if err := p.available(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if err := conn.AddMatchSignal(dbus.WithMatchObjectPath(Path), dbus.WithMatchInterface(Interface)); err != nil {
		conn.Close()
		return nil, fmt.Errorf("listen for the notifications' actions: %w", err)
	}
	p.sigs = make(chan *dbus.Signal, 16)
	conn.Signal(p.sigs)
	go p.serve()
	return p, nil
}

// available checks for a notification server and reads its capabilities.
func (p *Provider) available(ctx context.Context) error {
	var has bool
	if err := p.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, BusName).Store(&has); err != nil {
		return fmt.Errorf("ask the session bus for a notification server: %w", err)
	}
	if !has {
		var names []string
		if err := p.conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil || !contains(names, BusName) {
			return errors.New("no notification server is running on the session bus (nothing owns org.freedesktop.Notifications)")
		}
	}
	var caps []string
	if err := p.obj.CallWithContext(ctx, Interface+".GetCapabilities", 0).Store(&caps); err != nil {
		return fmt.Errorf("ask the notification server what it can do: %w", err)
	}
	p.markup = contains(caps, "body-markup")
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Name implements push.Provider.
func (p *Provider) Name() string { return Name }

// Send implements push.Provider.
func (p *Provider) Send(ctx context.Context, m push.Message) error {
	_, err := p.SendReport(ctx, m)
	return err
}

// SendReport implements push.Reporter: one Notify call.
func (p *Provider) SendReport(ctx context.Context, m push.Message) (string, error) {
	body := m.Body
	if p.markup {
		body = escape(body)
	}
	var actions []string
	if m.URL != "" {
		actions = []string{openAction, "Open Collie"}
	}
	urgency := byte(1) // normal
	hints := map[string]dbus.Variant{
		"urgency":        dbus.MakeVariant(urgency),
		"category":       dbus.MakeVariant("im.received"),
		"desktop-entry":  dbus.MakeVariant("collie"),
		"x-collie-kind":  dbus.MakeVariant(m.Kind.String()),
		"action-icons":   dbus.MakeVariant(false),
		"suppress-sound": dbus.MakeVariant(false),
	}
	var id uint32
	call := p.obj.CallWithContext(ctx, Interface+".Notify", 0, "Collie", uint32(0), "", m.Title, body, actions, hints, int32(-1))
	if err := call.Store(&id); err != nil {
		var de dbus.Error
		if errors.As(err, &de) {
			return "", fmt.Errorf("the notification server refused: %s", de.Name)
		}
		return "", fmt.Errorf("the notification server did not answer: %w", err)
	}
	if m.URL != "" {
		p.remember(id, m.URL)
	}
	return fmt.Sprintf("the desktop's notification server showed it (id %d)", id), nil
}

// escape makes s plain text for a server that draws body markup.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func (p *Provider) remember(id uint32, u string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.urls[id]; !ok {
		p.order = append(p.order, id)
	}
	p.urls[id] = u
	for len(p.order) > remembered {
		delete(p.urls, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *Provider) forget(id uint32) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.urls[id]
	delete(p.urls, id)
	return u, ok
}

// serve acts on the server's signals until Close.
func (p *Provider) serve() {
	defer close(p.done)
	for sig := range p.sigs {
		p.signal(sig)
		if p.handled != nil {
			p.handled(sig)
		}
	}
}

// signal acts on one signal from the bus.
func (p *Provider) signal(sig *dbus.Signal) {
	if sig.Path != Path {
		return
	}
	switch sig.Name {
	case Interface + ".ActionInvoked":
		id, ok1 := arg[uint32](sig, 0)
		key, ok2 := arg[string](sig, 1)
		if !ok1 || !ok2 || key != openAction || !p.fromServer(sig.Sender) {
			return
		}
		if u, ok := p.forget(id); ok {
			if err := p.open(u); err != nil {
				p.log.Warn("could not open the web app from a desktop notification", "err", err)
			}
		}
	case Interface + ".NotificationClosed":
		if id, ok := arg[uint32](sig, 0); ok && p.fromServer(sig.Sender) {
			p.forget(id)
		}
	}
}

func arg[T any](sig *dbus.Signal, i int) (T, bool) {
	var zero T
	if len(sig.Body) <= i {
		return zero, false
	}
	v, ok := sig.Body[i].(T)
	return v, ok
}

// fromServer reports whether sender is the unique name that owns the
// notification server's name now.
func (p *Provider) fromServer(sender string) bool {
	var owner string
	if err := p.conn.BusObject().Call("org.freedesktop.DBus.GetNameOwner", 0, BusName).Store(&owner); err != nil {
		return false
	}
	return owner != "" && owner == sender
}

// Close stops listening and hangs up. Closing the connection closes the
// signal channel (godbus's handler does), which ends serve.
func (p *Provider) Close() error {
	err := p.conn.Close()
	<-p.done
	return err
}

// openURI opens an http(s) URL in the user's browser. It asks the desktop
// portal first: the daemon runs sandboxed (collie.service), and a browser
// started as its child would inherit the sandbox; the portal starts it in
// the user's session. Without a portal it runs xdg-open.
func (p *Provider) openURI(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
		return errors.New("not a web address")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	portal := p.conn.Object("org.freedesktop.portal.Desktop", "/org/freedesktop/portal/desktop")
	if err := portal.CallWithContext(ctx, "org.freedesktop.portal.OpenURI.OpenURI", 0, "", pu.String(), map[string]dbus.Variant{}).Err; err == nil {
		return nil
	}
	return xdgOpen(pu.String())
}

// xdgOpen opens a checked web address with xdg-open.
func xdgOpen(u string) error {
	cmd := exec.Command("xdg-open", u)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run xdg-open: %w", err)
	}
	go cmd.Wait()
	return nil
}
