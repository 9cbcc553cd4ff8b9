// Package webpush is the Web Push provider of internal/bridge/push: it delivers a
// push.Message to every browser a paired device subscribed (RFC 8030),
// signed with the bridge's VAPID key (RFC 8292) and encrypted for the
// subscription's keys (RFC 8291, aes128gcm).
//
// It is written on the standard library (crypto/ecdh, crypto/hkdf,
// crypto/ecdsa), not on a Web Push library: the whole of RFC 8291 is some
// sixty lines here, checked byte for byte against its Appendix A, and a
// library would bring a JWT package and deprecated elliptic-curve calls
// for no gain.
//
// A push only opens the web app; it never answers (D6). The payload holds
// the Message as the guard made it (D4, D9): its Body carries question
// text only when previews are on, and nothing is added here.
//
// Wiring (the daemon): New(Options{StateDir: paths.State, Log: log}) at
// start, before the dispatcher that holds it; when the bridge opens the
// device store, SetSubscriptions(store) (*store.Store is a
// Subscriptions), and device.Options.WebPushKey = PublicKey(), which the
// page subscribes with. The pushes go to the devices that turned
// notifications on; with none, a question's push is nothing to do.
package webpush

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/bridge/push"
)

// Target is one device's subscription.
type Target struct {
	Device string // the paired device's id
	Sub    Subscription
}

// Subscriptions is where the subscriptions live: the device store, which
// drops a device's subscription when the device is revoked.
type Subscriptions interface {
	// PushTargets lists every paired device's subscription.
	PushTargets() []Target
	// DropPushSubscription forgets device's subscription if its endpoint
	// is still endpoint (a newer one stays): the push service said it is
	// gone (404, 410).
	DropPushSubscription(device, endpoint string) error
}

// DefaultSubject is the VAPID contact (RFC 8292 §2.1) when none is set:
// the project's page, where a push service operator finds who to ask.
const DefaultSubject = "https://github.com/collie-linux/collie"

// TTL is how long a push service keeps a push for a device that is
// offline (RFC 8030 §5.2): a question older than that is on the page.
const TTL = 4 * time.Hour

// Options configure the provider.
type Options struct {
	// StateDir holds the VAPID key (KeyFile), made at first start.
	StateDir string
	// Subscriptions is where the subscriptions are; nil until
	// SetSubscriptions (the device store opens after the dispatcher that
	// holds this provider is made).
	Subscriptions Subscriptions
	// Client sends the pushes; nil is a client that connects only to
	// public internet addresses, with no proxy, each push bounded by
	// push.AttemptTimeout (tests give the double's). It never follows a
	// redirect.
	Client *http.Client
	Log    *slog.Logger
	// Subject is the VAPID contact, a mailto: or https: URI; "" is
	// DefaultSubject.
	Subject string
	Now     func() time.Time
}

// Provider sends pushes to the browsers of paired devices.
type Provider struct {
	keys    *Keys
	subs    atomic.Pointer[subsBox]
	client  *http.Client
	log     *slog.Logger
	subject string
	now     func() time.Time

	mu     sync.Mutex
	tokens map[string]token // by push service origin
}

var (
	_ push.Reporter = (*Provider)(nil)
	_ push.Fanout   = (*Provider)(nil)
)

// New loads (or at first start makes) the VAPID key in o.StateDir and
// returns the provider. Serve its PublicKey to the page.
func New(o Options) (*Provider, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Subject == "" {
		o.Subject = DefaultSubject
	}
	keys, err := LoadKeys(o.StateDir, o.Log)
	if err != nil {
		return nil, err
	}
	c := publicClient()
	if o.Client != nil {
		cc := *o.Client
		c = &cc
	}
	// A push service answers; it does not send the push elsewhere.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := &Provider{keys: keys, client: c, log: o.Log, subject: o.Subject, now: o.Now, tokens: map[string]token{}}
	if o.Subscriptions != nil {
		p.SetSubscriptions(o.Subscriptions)
	}
	return p, nil
}

type subsBox struct{ s Subscriptions }

// tokenReuse is how long a signed VAPID token is used again for the same
// push service: Apple asks for a new token at most once an hour, and a
// token is valid for TokenLifetime.
const tokenReuse = TokenLifetime / 2

type token struct {
	header string
	signed time.Time
}

// authorization is the Authorization header for a push service at origin:
// the token signed for it last, while younger than tokenReuse.
func (p *Provider) authorization(origin string) (string, error) {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.tokens[origin]; ok && now.Sub(t.signed) < tokenReuse && !now.Before(t.signed) {
		return t.header, nil
	}
	h, err := p.keys.authorization(origin, p.subject, now)
	if err != nil {
		return "", err
	}
	if len(p.tokens) >= 64 {
		clear(p.tokens) // a handful of push services are in use; never grow
	}
	p.tokens[origin] = token{h, now}
	return h, nil
}

// SetSubject changes the VAPID contact (a reload of [push] contact); the
// next push to each service signs a new token with it.
func (p *Provider) SetSubject(subject string) {
	if subject == "" {
		subject = DefaultSubject
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.subject != subject {
		p.subject = subject
		clear(p.tokens)
	}
}

// SetSubscriptions gives the provider its subscriptions (the device
// store). Until then it has none, and a question's push goes nowhere.
func (p *Provider) SetSubscriptions(s Subscriptions) { p.subs.Store(&subsBox{s}) }

func (p *Provider) subscriptions() Subscriptions {
	if b := p.subs.Load(); b != nil {
		return b.s
	}
	return nil
}

// Name implements push.Provider.
func (p *Provider) Name() string { return "webpush" }

// PublicKey is the VAPID public key the page subscribes with.
func (p *Provider) PublicKey() string { return p.keys.PublicKey() }

// NoSubscriptions is SendReport's answer when no device has turned
// notifications on (collie push test shows it).
const NoSubscriptions = "no paired device has turned on notifications yet; open Collie on the phone and tap Turn on notifications"

// Idle implements push.Idler: NoSubscriptions while no paired device has
// turned notifications on.
func (p *Provider) Idle() string {
	if subs := p.subscriptions(); subs != nil && len(subs.PushTargets()) > 0 {
		return ""
	}
	return NoSubscriptions
}

// Error is a push a push service did not take. Temporary ones (429, 5xx,
// the network) are worth retrying; the notification's tag makes a push
// that arrives twice show once on the device.
type Error struct {
	Device     string // the device's id
	Host       string // the push service's origin; never the endpoint, a capability
	Status     int    // 0: no answer
	RetryAfter time.Duration
	Err        error // the network's error, when Status is 0
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("web push to device %s through %s failed: %v", e.Device, e.Host, e.Err)
	}
	what := "refused the push"
	switch {
	case e.Status == http.StatusTooManyRequests:
		what = "asked to slow down (429)"
	case e.Status >= 500:
		what = "failed (" + strconv.Itoa(e.Status) + ")"
	case e.Status == http.StatusForbidden || e.Status == http.StatusUnauthorized:
		what = "refused the bridge's VAPID key (" + strconv.Itoa(e.Status) + "); open Collie on that device and turn notifications on again"
	case e.Status == http.StatusRequestEntityTooLarge:
		what = "refused the push as too large (413)"
	default:
		what += " (" + strconv.Itoa(e.Status) + ")"
	}
	return fmt.Sprintf("web push to device %s: %s %s", e.Device, e.Host, what)
}

func (e *Error) Unwrap() error { return e.Err }

// errNoAnswer is why a push failed when its service held its answer past
// the deadline of one try (push.AttemptTimeout).
var errNoAnswer = errors.New("no answer in time")

// Temporary reports whether sending again later may work.
func (e *Error) Temporary() bool {
	if errors.Is(e.Err, errNotPublic) {
		return false
	}
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// Send implements push.Provider (see SendReport).
func (p *Provider) Send(ctx context.Context, m push.Message) error {
	_, err := p.SendReport(ctx, m)
	return err
}

// Destinations implements push.Fanout: one per subscribed device, keyed
// by its endpoint (never shown), named by the device's id and its push
// service's origin.
func (p *Provider) Destinations() []push.Destination {
	subs := p.subscriptions()
	if subs == nil {
		return nil
	}
	ts := subs.PushTargets()
	out := make([]push.Destination, 0, len(ts))
	for _, t := range ts {
		out = append(out, push.Destination{Key: t.Sub.Endpoint, Name: "device " + t.Device + " at " + t.Sub.Origin()})
	}
	return out
}

// SendTo implements push.Fanout: m to the one subscription whose endpoint
// is key, once. Its error is as SendReport's for that one push; one that
// wraps push.ErrGone when no device holds that subscription now (revoked,
// or subscribed anew) or its service said it has ended (404, 410: it is
// forgotten).
func (p *Provider) SendTo(ctx context.Context, key string, m push.Message) (string, error) {
	payload, err := Payload(m)
	if err != nil {
		return "", push.Permanent(err)
	}
	var target *Target
	if subs := p.subscriptions(); subs != nil {
		for _, t := range subs.PushTargets() {
			if t.Sub.Endpoint == key {
				target = &t
				break
			}
		}
	}
	if target == nil {
		return "", fmt.Errorf("no paired device holds this push subscription now: %w", push.ErrGone)
	}
	o := p.sendOne(ctx, *target, payload, urgency(m))
	switch {
	case o.gone:
		return "", fmt.Errorf("device %s's push subscription had ended and was forgotten: %w", target.Device, push.ErrGone)
	case o.err != nil:
		return "", retryable(o.err)
	}
	return fmt.Sprintf("device %s: %s took it", target.Device, target.Sub.Origin()), nil
}

// retryable marks a failed push for the dispatcher: a *push.RetryAfterError
// when the service named a wait, plain when a retry may work (429, 5xx,
// no answer), push.Permanent otherwise.
func retryable(err error) error {
	var e *Error
	switch {
	case !errors.As(err, &e) || !e.Temporary():
		return push.Permanent(err)
	case e.RetryAfter > 0:
		return &push.RetryAfterError{After: e.RetryAfter, Err: err}
	}
	return err
}

func urgency(m push.Message) string {
	if m.Kind == push.KindSummary {
		return "normal"
	}
	return "high" // a question waits for a human (RFC 8030 §5.3)
}

// SendReport implements push.Reporter: it encrypts m for every
// subscription and hands it to each push service at once (collie push
// test; the dispatcher sends to each subscription on its own, through
// SendTo). A subscription its service says has ended (404, 410) is
// forgotten. The error joins an *Error per push not taken: a
// *push.RetryAfterError when a service named a wait, a push.Permanent one
// when no failure is worth retrying (a 4xx, a subscription that is not
// valid), else plain.
func (p *Provider) SendReport(ctx context.Context, m push.Message) (string, error) {
	payload, err := Payload(m)
	if err != nil {
		return "", push.Permanent(err)
	}
	var targets []Target
	if subs := p.subscriptions(); subs != nil {
		targets = subs.PushTargets()
	}
	if len(targets) == 0 {
		// Nothing to do, and nothing failed: say what would send one.
		return NoSubscriptions, nil
	}
	urgency := urgency(m)
	outcomes := make([]outcome, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { outcomes[i] = p.sendOne(ctx, t, payload, urgency) })
	}
	wg.Wait()
	var errs []error
	took, gone, retry := 0, 0, false
	var wait time.Duration
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			errs = append(errs, o.err)
			var e *Error
			if errors.As(o.err, &e) && e.Temporary() {
				retry = true
				wait = max(wait, e.RetryAfter)
			}
		case o.gone:
			gone++
		default:
			took++
		}
	}
	answer := fmt.Sprintf("%d of %d subscribed devices' push services took it", took, len(targets))
	if gone > 0 {
		answer += fmt.Sprintf("; %d subscriptions had ended and were forgotten", gone)
	}
	if len(errs) == 0 {
		return answer, nil
	}
	err = errors.Join(errs...)
	if took > 0 {
		err = &push.PartialError{Delivered: took, Err: err}
	}
	switch {
	case !retry:
		return "", push.Permanent(err)
	case wait > 0:
		return "", &push.RetryAfterError{After: wait, Err: err}
	}
	return "", err
}

// outcome is one subscription's push: taken, gone (forgotten), or err.
type outcome struct {
	gone bool
	err  error
}

func (p *Provider) sendOne(ctx context.Context, t Target, payload []byte, urgency string) outcome {
	host := t.Sub.Origin()
	pub, err := t.Sub.publicKey()
	if err != nil {
		return outcome{err: fmt.Errorf("device %s's push subscription is not valid: %w", t.Device, err)}
	}
	uaPublic, _ := ecdhPublic(pub)
	auth, err := t.Sub.auth()
	if err != nil {
		return outcome{err: fmt.Errorf("device %s's push subscription is not valid: %w", t.Device, err)}
	}
	body, err := seal(payload, uaPublic, auth)
	if err != nil {
		return outcome{err: err}
	}
	authz, err := p.authorization(host)
	if err != nil {
		return outcome{err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return outcome{err: fmt.Errorf("device %s's push subscription is not valid: %w", t.Device, ErrSubscription)}
	}
	h := req.Header
	h.Set("Authorization", authz)
	h.Set("Content-Encoding", "aes128gcm")
	h.Set("Content-Type", "application/octet-stream")
	h.Set("TTL", strconv.Itoa(int(TTL/time.Second)))
	h.Set("Urgency", urgency)
	resp, err := p.client.Do(req)
	if err != nil {
		why := errors.Unwrap(err)
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			why = errNoAnswer
		}
		return outcome{err: &Error{Device: t.Device, Host: host, Err: why}}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return outcome{}
	case s == http.StatusNotFound || s == http.StatusGone:
		// RFC 8030 §7.3: the subscription has expired or was cancelled.
		if err := p.subscriptions().DropPushSubscription(t.Device, t.Sub.Endpoint); err != nil {
			return outcome{err: fmt.Errorf("forget device %s's ended push subscription: %w", t.Device, err)}
		}
		p.log.Info("a push service said a device's subscription has ended; forgot it", "device", t.Device, "service", host, "status", s)
		return outcome{gone: true}
	default:
		e := &Error{Device: t.Device, Host: host, Status: s}
		if d, ok := push.RetryAfter(resp.Header.Get("Retry-After"), p.now()); ok && d > 0 {
			e.RetryAfter = min(d, time.Hour)
		}
		return outcome{err: e}
	}
}

// payload is what the service worker reads (internal/bridge/device/web's
// sw-push.js): version, kind, title, body, the URL a click opens and a
// tag, so a push that arrives twice replaces itself on the device.
type payload struct {
	V     int    `json:"v"`
	Kind  string `json:"kind"`
	Title string `json:"title"`
	Body  string `json:"body"`
	URL   string `json:"url"`
	Tag   string `json:"tag"`
}

// Payload is the JSON a push carries for m, cut to fit one push: the body
// first, then the title, each at a whole character, ending with "…".
func Payload(m push.Message) ([]byte, error) {
	pl := payload{V: 1, Kind: m.Kind.String(), Title: m.Title, Body: m.Body, URL: m.URL, Tag: tag(m)}
	b, err := json.Marshal(pl)
	if err != nil || len(b) <= MaxPlaintext {
		return b, err
	}
	for _, field := range []*string{&pl.Body, &pl.Title} {
		full := *field
		// The longest prefix of the field that fits, by bisection: JSON's
		// escapes make the bytes saved differ from the bytes cut.
		lo, hi := 0, len(full) // lo fits (with the rest as it is), hi does not
		*field = ""
		if b, _ = json.Marshal(pl); len(b) > MaxPlaintext {
			continue // does not fit even without this field: cut the next
		}
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			*field = prefix(full, mid)
			if b, _ = json.Marshal(pl); len(b) <= MaxPlaintext {
				lo = mid
			} else {
				hi = mid
			}
		}
		*field = prefix(full, lo)
		return json.Marshal(pl)
	}
	return nil, fmt.Errorf("the push's address is too long for Web Push (%d bytes, at most %d)", len(b), MaxPlaintext)
}

// prefix is s cut to at most n bytes at a whole character, with "…" in
// the last of them; "" when nothing is left.
func prefix(s string, n int) string {
	keep := n - len("…")
	if keep <= 0 {
		return ""
	}
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	if keep == 0 {
		return ""
	}
	return s[:keep] + "…"
}

// tag names the notification on the device: one per question key, so a
// push sent again replaces the first; the key itself (agent and tool call
// ids) does not leave the bridge.
func tag(m push.Message) string {
	if m.Key == "" {
		return "collie-" + m.Kind.String()
	}
	sum := sha256.Sum256([]byte(m.Key))
	return "collie-q-" + base64.RawURLEncoding.EncodeToString(sum[:12])
}
