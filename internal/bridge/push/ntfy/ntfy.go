// Package ntfy sends pushes through an ntfy server's publish API
// (https://docs.ntfy.sh/publish/), which the ntfy phone app then
// delivers. One push is one POST of a JSON message to the server's root:
// the topic, title, body, priority, a click URL that opens the web app,
// and one action button, a "view" action that only opens that URL. No
// action ever answers a question (D6): ntfy's http and broadcast actions
// are never sent.
//
// Secrets: the access token (sent as Authorization: Bearer) and the topic
// (on a public server, whoever knows it can read the pushes) appear in no
// error, log line or answer: they name the server's origin only.
package ntfy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
)

// Name is the provider's name in config.toml, logs and doctor.
const Name = "ntfy"

// Timeout bounds one publish: connect, request and answer. A server
// that holds its answer longer is tried again later (the dispatcher's
// backoff).
const Timeout = push.AttemptTimeout

// answerCap bounds the answer read from the server.
const answerCap = 64 << 10

// Priorities ntfy knows, by name, as config.toml takes them.
var priorities = map[string]int{"min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "urgent": 5}

// Options configure a Provider.
type Options struct {
	// Server is the ntfy server's base URL: https://, or http:// only to
	// 127.0.0.1, ::1 or localhost; no user, password, query or fragment.
	Server string
	// Topic is the topic to publish to: 1 to 64 of A-Z a-z 0-9 _ -.
	Topic string
	// Token is the access token; "" publishes without one.
	Token string
	// Priority is a name of Priorities; "" is "default".
	Priority string
	// Client overrides the HTTP client (tests); its redirects are refused
	// all the same.
	Client *http.Client
}

// Provider publishes to one ntfy topic.
type Provider struct {
	endpoint string // the server's base URL, with a trailing /
	origin   string // scheme://host[:port], the only part errors name
	topic    string
	token    string
	priority int
	hc       *http.Client
}

// New checks o and returns the provider. An error names the setting and
// says what to write; it never quotes the token or the topic.
func New(o Options) (*Provider, error) {
	u, err := CheckServer(o.Server)
	if err != nil {
		return nil, err
	}
	if err := CheckTopic(o.Topic); err != nil {
		return nil, err
	}
	if err := CheckToken(o.Token); err != nil {
		return nil, err
	}
	prio := 3
	if o.Priority != "" {
		p, ok := priorities[o.Priority]
		if !ok {
			return nil, fmt.Errorf("ntfy priority %q is not one of min, low, default, high, max, urgent", clip(o.Priority))
		}
		prio = p
	}
	hc := &http.Client{Timeout: Timeout}
	if o.Client != nil {
		c := *o.Client
		hc = &c
	}
	// A redirect would take the token to another address: never followed.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	base := u.String()
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return &Provider{endpoint: base, origin: u.Scheme + "://" + u.Host, topic: o.Topic, token: o.Token, priority: prio, hc: hc}, nil
}

// CheckServer checks an ntfy server URL and returns it parsed.
func CheckServer(s string) (*url.URL, error) {
	const fix = `set server in [push.ntfy] to https://ntfy.sh or your own server's https:// address`
	if s == "" {
		return nil, errors.New("ntfy has no server; " + fix)
	}
	if len(s) > 2048 {
		return nil, errors.New("the ntfy server URL is over 2048 bytes; " + fix)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("the ntfy server is not a URL; " + fix)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, errors.New("the ntfy server URL has a user, password, query or fragment; give the token with token_file or token_env instead, and " + fix)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if h := u.Hostname(); h != "127.0.0.1" && h != "::1" && h != "localhost" {
			return nil, errors.New("plain http:// is only for an ntfy server on this machine (127.0.0.1, ::1 or localhost), so the token and pushes never cross a network in the clear; " + fix)
		}
	default:
		return nil, errors.New("the ntfy server URL is not https://; " + fix)
	}
	return u, nil
}

// CheckTopic checks a topic name as ntfy takes it.
func CheckTopic(t string) error {
	ok := len(t) >= 1 && len(t) <= 64
	for i := 0; ok && i < len(t); i++ {
		c := t[i]
		ok = c == '-' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	if !ok {
		return errors.New("the ntfy topic must be 1 to 64 of A-Z, a-z, 0-9, _ and -; on a public server pick one nobody can guess, such as collie-$(openssl rand -hex 8)")
	}
	return nil
}

// CheckToken checks an access token: "" or 1 to 4096 bytes of printable
// ASCII with no spaces.
func CheckToken(t string) error {
	if len(t) > 4096 {
		return errors.New("the ntfy token is over 4096 bytes; check token_file or token_env")
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return errors.New("the ntfy token has a space, a control character or a byte that is not ASCII; check token_file or token_env")
		}
	}
	return nil
}

// Name implements push.Provider.
func (p *Provider) Name() string { return Name }

// Send implements push.Provider.
func (p *Provider) Send(ctx context.Context, m push.Message) error {
	_, err := p.SendReport(ctx, m)
	return err
}

// message is ntfy's JSON publish body.
type message struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title,omitempty"`
	Message  string   `json:"message"`
	Priority int      `json:"priority,omitempty"`
	Click    string   `json:"click,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Actions  []action `json:"actions,omitempty"`
}

// action is an ntfy action button. Only "view" is ever sent: it opens a
// URL and nothing else (D6).
type action struct {
	Action string `json:"action"`
	Label  string `json:"label"`
	URL    string `json:"url"`
	Clear  bool   `json:"clear"`
}

// Body returns the JSON this provider publishes for m (tests and docs).
func (p *Provider) Body(m push.Message) ([]byte, error) {
	msg := message{Topic: p.topic, Title: m.Title, Message: m.Body, Priority: p.priority}
	if msg.Message == "" {
		msg.Message = m.Title // ntfy shows "triggered" for an empty one
	}
	if p.priority == 3 {
		msg.Priority = 0 // the server's default
	}
	if m.URL != "" {
		msg.Click = m.URL
		msg.Actions = []action{{Action: "view", Label: "Open Collie", URL: m.URL, Clear: true}}
	}
	if m.Kind == push.KindSummary {
		msg.Tags = []string{"hourglass"}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// published is what ntfy answers a publish with; only the id is read.
type published struct {
	ID string `json:"id"`
}

// SendReport implements push.Reporter: one POST, bounded by Timeout and
// ctx. A 429 or 503 with Retry-After is a *push.RetryAfterError; any other
// 4xx but 408 is permanent; the rest is for the caller to retry.
func (p *Provider) SendReport(ctx context.Context, m push.Message) (string, error) {
	answer, err := p.publish(ctx, m)
	if err != nil {
		return "", p.redactErr(err)
	}
	return p.redact(answer), nil
}

// redact takes the topic and the token out of s, wherever a system's
// message may have quoted them.
func (p *Provider) redact(s string) string {
	if p.token != "" {
		s = strings.ReplaceAll(s, p.token, "<token>")
	}
	return strings.ReplaceAll(s, p.topic, "<topic>")
}

func (p *Provider) redactErr(err error) error {
	msg := p.redact(err.Error())
	if msg == err.Error() {
		return err
	}
	var ra *push.RetryAfterError
	switch {
	case errors.As(err, &ra):
		return &push.RetryAfterError{After: ra.After, Err: errors.New(msg)}
	case push.IsPermanent(err):
		return push.Permanent(errors.New(msg))
	}
	return errors.New(msg)
}

func (p *Provider) publish(ctx context.Context, m push.Message) (string, error) {
	body, err := p.Body(m)
	if err != nil {
		return "", push.Permanent(fmt.Errorf("encode the ntfy message: %w", err))
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", push.Permanent(fmt.Errorf("ntfy at %s: build the request", p.origin))
	}
	req.Header.Set("Content-Type", "application/json")
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("ntfy at %s cannot be reached: %s", p.origin, netReason(err))
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, answerCap))
	status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode == http.StatusOK:
		var a published
		if json.Unmarshal(data, &a) == nil && a.ID != "" {
			return fmt.Sprintf("ntfy at %s accepted it (message %s)", p.origin, clip(a.ID)), nil
		}
		return fmt.Sprintf("ntfy at %s accepted it", p.origin), nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		err := fmt.Errorf("ntfy at %s answered %s", p.origin, status)
		if d, ok := push.RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			return "", &push.RetryAfterError{After: d, Err: err}
		}
		return "", err
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return "", push.Permanent(fmt.Errorf("ntfy at %s answered %s, a redirect, which Collie never follows (the token would go with it); set server in [push.ntfy] to the address it redirects to", p.origin, status))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", push.Permanent(fmt.Errorf("ntfy at %s answered %s: the topic needs an access token with write access; set token_file or token_env in [push.ntfy]", p.origin, status))
	case resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout:
		return "", push.Permanent(fmt.Errorf("ntfy at %s answered %s", p.origin, status))
	default:
		return "", fmt.Errorf("ntfy at %s answered %s", p.origin, status)
	}
}

// netReason says why a request failed without the URL: net/http's
// *url.Error quotes the whole URL, the topic with it.
func netReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return clip(op.Op + ": " + op.Err.Error())
	}
	return clip(err.Error())
}

// clip makes a value from the server or the system safe for a log line.
func clip(s string) string {
	s, _ = sanitize.Line(s, 200)
	return s
}
