package device

import (
	"context"
	"errors"
	"fmt"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/bridge/device/web"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/sanitize"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Backend is what the device API needs from the bridge.
type Backend interface {
	// View is what the bridge holds, after cleaning. A snapshot it
	// returns is never changed afterwards: new content is a new Snapshot
	// (the device API knows an agent did not change by its pointer).
	View() []view.Agent
	// Forward sends a write to the named agent. Only the device API calls
	// it: nothing in the bridge answers on behalf of an agent, a hook or
	// model output (D6).
	Forward(ctx context.Context, agent, path string, req wire.WriteRequest) (*wire.WriteReply, error)
	// SetWatching says whether a device is looking (K8).
	SetWatching(on bool)
}

// Recorder writes the audit log: every write a device asks for, carried
// out or refused (A1–A5).
type Recorder interface {
	// Begin records a write about to be forwarded to the agent, before it
	// is (an intent line); End on what it returns records how it ended
	// ("ok", "refused" by the agent, "failed"). A crash between the two
	// leaves the write as "outcome unknown" in the log. write is the
	// write's name ("answer", "send", …).
	Begin(dev store.Device, agent, write string, req wire.WriteRequest) Outcome
	// Refused records writes the device API refused itself, before they
	// reached an agent; r.Count > 1 stands for repeats coalesced.
	Refused(r Refusal)
	// Receipts lists a device's receipts since a time (A6).
	Receipts(device string, since time.Time) ([]audit.Receipt, error)
	// Setting records a write of the device's own settings (turning
	// notifications on or off) that the bridge carried out or failed;
	// Refused records it refused.
	Setting(dev store.Device, ev audit.Event)
}

// Outcome ends a write that Recorder.Begin noted.
type Outcome interface {
	End(result, reason string)
}

// Options configure the device API.
type Options struct {
	Backend  Backend
	Store    *store.Store
	Pairings *store.Pairings
	Audit    Recorder // nil: no audit (tests)
	Log      *slog.Logger
	Now      func() time.Time
	// Site is the listener's allow-list of host names and origins
	// (Listener.Site); requests for any other host are refused.
	Site *policy.Site
	// WebPushKey is the VAPID public key pages subscribe with
	// (webpush.Provider.PublicKey); "" when Web Push is off.
	WebPushKey string
	// Agents serves the agent surface (loginwire.Routes: agent login and
	// the agent API, internal/login/loginapi) on this listener; nil: not served.
	Agents http.Handler
}

// API serves the device API, /api/v1/.
type API struct {
	o        Options
	site     *policy.Site
	feed     *feed
	decided  *decisions
	writes   *policy.Limiter // per device
	srcWrite *policy.Limiter // per source: writes
	srcPair  *policy.Limiter // per source: pairing attempts
	srcAgent *policy.Limiter // per source: the agent surface
	refusals *refusals
	outlook  *tracker // what devices read, with revisions (reads.go)

	// identify names who a refused credential belongs to
	// (Store.Identify); a field so that tests count its calls.
	identify func(cred string) string

	// beforeStream, when set (tests), runs after an event stream's request
	// arrived and before it is registered: where a revoke used to slip in.
	beforeStream func()
}

// NewAPI returns the device API. Call Close when it stops serving.
func NewAPI(o Options) *API {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	site := o.Site
	if site == nil {
		site = &policy.Site{} // allows no host: nothing is served
	}
	a := &API{
		o:        o,
		site:     site,
		feed:     newFeed(o.Store.Authenticate, o.Backend.SetWatching),
		decided:  newDecisions(o.Now),
		writes:   policy.NewLimiter(5, 20, o.Now),
		srcWrite: policy.NewLimiter(10, 40, o.Now),
		srcPair:  policy.NewLimiter(0.2, 5, o.Now),
		srcAgent: policy.NewLimiter(5, 40, o.Now),
	}
	a.identify = o.Store.Identify
	a.refusals = newRefusals(RefusalWindow, a.record)
	a.outlook = newTracker(o.Backend.View, epoch())
	a.outlook.now = o.Now
	return a
}

// Close writes the counts of refusals still being coalesced. Call it when
// the API stops serving, before the audit log closes.
func (a *API) Close() { a.refusals.close() }

// record writes one refusal record: a refused write to the audit log (A1),
// anything else (a pairing attempt, a request for another host) to the
// journal. Either way the count says how many it stands for.
func (a *API) record(r refusal) {
	if audit.Audited(r.Write) && a.o.Audit != nil {
		a.o.Audit.Refused(r.Refusal)
		return
	}
	what := "refused a request for another host name (a page on another site?)"
	if r.Code == string(apierr.CrossSiteCode) && r.Write == "" {
		what = "refused a read from another site's page"
	}
	switch r.Write {
	case "":
	case "pair":
		what = "refused a pairing attempt"
	case unknownWrite:
		what = "refused a request for a write the device API does not have"
	default:
		what = "refused a write"
	}
	a.o.Log.Warn(what, "source", r.source, "code", r.Code, "reason", r.Reason, "count", r.Count)
}

// unknownWrite is the write name of the route that catches a write name
// the protocol does not have: refusals on it are not writes to an agent,
// and go to the journal saying so.
const unknownWrite = "unknown-write"

// Changed tells open event streams that the bridge's state changed.
func (a *API) Changed() { a.feed.changed() }

// Revoke cuts a device off: its credential stops working and its live
// event streams end at once.
func (a *API) Revoke(id string) error {
	return a.feed.revoke(id, func() error { return a.o.Store.Revoke(id) })
}

// Handler returns the API's routes, every one behind the Host check and
// every write behind the write gate (see router).
func (a *API) Handler() http.Handler { return a.routes() }

func (a *API) routes() *router {
	rt := newRouter(a)
	rt.write("POST /api/v1/pair", gateSpec{write: "pair", source: a.srcPair}, a.pair)
	rt.read("GET /api/v1/whoami", a.authed(a.whoami))
	rt.read("GET /api/v1/state", a.authed(a.state))
	rt.read("GET /api/v1/events", http.HandlerFunc(a.events))
	rt.read("GET /api/v1/agents", a.authed(a.agentsRead))
	rt.read("GET /api/v1/agents/{agent}", a.authed(a.agentRead))
	rt.read("GET /api/v1/agents/{agent}/conversations/{id}", a.authed(a.conversationRead))
	rt.read("GET /api/v1/receipts", a.authed(a.receipts))
	// Web Push: the key, and this device's own subscription (pushapi.go).
	rt.read("GET /api/v1/push", a.authed(a.pushRead))
	rt.write("POST /api/v1/push/subscription", gateSpec{write: "push.subscribe", paired: true, source: a.srcWrite}, a.pushSubscribe)
	rt.write("DELETE /api/v1/push/subscription", gateSpec{write: "push.unsubscribe", paired: true, source: a.srcWrite}, a.pushUnsubscribe)
	// The protocol's writes, one route each, from its registry.
	for _, wr := range wire.Writes() {
		rt.write("POST /api/v1/agents/{agent}/"+wr.Name, gateSpec{write: wr.Name, paired: true, source: a.srcWrite}, a.write)
	}
	// Any other name: told which there are (after the gate, like a write).
	rt.write("POST /api/v1/agents/{agent}/{write}", gateSpec{write: unknownWrite, paired: true, source: a.srcWrite}, a.noSuchWrite)
	if a.o.Agents != nil {
		for _, p := range loginwire.Patterns() {
			rt.agentRoute(p, a.o.Agents)
		}
	}
	rt.read("GET /healthz", http.HandlerFunc(healthz))
	rt.read("GET /", web.Handler()) // the web app (internal/bridge/device/web)
	return rt
}

// authed lets through only requests with a paired device's credential,
// registered so that a revoke ends them.
func (a *API) authed(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _, ctx, leave, ok := a.feed.enter(r.Context(), credential(r), false)
		if !ok {
			a.refuseUnpaired(w, r)
			return
		}
		defer leave()
		next(w, r.WithContext(context.WithValue(ctx, ctxKey{}, d)))
	})
}

// revokedMidRead answers a read whose device was revoked while it was
// being made (its context ended; a client that went away reads nothing).
func revokedMidRead(w http.ResponseWriter) {
	apierr.Refuse(w, apierr.Revoked)
}

// replyRead writes a read's reply, unless the device was revoked while it
// was being made.
func replyRead(w http.ResponseWriter, r *http.Request, v any) {
	if r.Context().Err() != nil {
		revokedMidRead(w)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// PairRequest redeems a pairing secret.
type PairRequest struct {
	Secret string `json:"secret"`
	Name   string `json:"name"`
}

// PairReply carries the device's credential, shown once.
type PairReply struct {
	DeviceID   string `json:"deviceId"`
	Credential string `json:"credential"`
	Code       string `json:"code"` // the verification code, to compare with collie pair's
}

func (a *API) pair(w http.ResponseWriter, r *http.Request, c *call) {
	var req PairRequest
	if err := decodeBody(r, &req); err != nil {
		c.refuse(w, nil, bodyRefusal(err), err.Error())
		return
	}
	if err := a.o.Pairings.Redeem(req.Secret); err != nil {
		why := apierr.PairingUnknown
		if errors.Is(err, store.ErrPairingExpired) {
			why = apierr.PairingExpired
		}
		c.refuse(w, nil, why)
		return
	}
	// A device the user did not name is named after its browser and
	// platform ("Chrome on Android"), not all alike.
	name := req.Name
	if n, _ := sanitize.Line(name, sanitize.LabelBytes); strings.TrimSpace(n) == "" {
		name = NameFromUserAgent(r.Header.Get("User-Agent"))
	}
	d, cred, err := a.o.Store.Add(name)
	if err != nil {
		apierr.Refuse(w, apierr.DeviceNotSaved)
		a.o.Log.Error("save a paired device", "err", err)
		return
	}
	a.o.Log.Info(fmt.Sprintf("a device was paired: %q (%s)", d.Name, d.ID), "device", d.ID, "name", d.Name)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cred, Path: "/api/", HttpOnly: true, Secure: policy.Secure(r), SameSite: http.SameSiteStrictMode, MaxAge: 400 * 24 * 3600})
	writeJSON(w, http.StatusOK, PairReply{DeviceID: d.ID, Credential: cred, Code: store.VerificationCode(req.Secret)})
}

// DeviceView is what the API shows of a device: never the stored record,
// whose credential hash stays in the bridge.
type DeviceView struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	PairedAt time.Time `json:"pairedAt"`
	LastSeen time.Time `json:"lastSeen,omitzero"`
}

// viewOf is what the API shows of d.
func viewOf(d store.Device) DeviceView {
	return DeviceView{ID: d.ID, Name: d.Name, PairedAt: d.PairedAt, LastSeen: d.LastSeen}
}

func (a *API) whoami(w http.ResponseWriter, r *http.Request) {
	replyRead(w, r, viewOf(deviceOf(r.Context())))
}

// receipts lists the device's own receipts (A6): what it did, when, and
// what came of it, without typed text. ?since=RFC3339 narrows the list.
func (a *API) receipts(w http.ResponseWriter, r *http.Request) {
	if a.o.Audit == nil {
		writeJSON(w, http.StatusOK, []audit.Receipt{})
		return
	}
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			apierr.Refuse(w, apierr.BadSince)
			return
		}
		since = t
	}
	list, err := a.o.Audit.Receipts(deviceOf(r.Context()).ID, since)
	if err != nil {
		a.o.Log.Error("read receipts", "err", err)
		apierr.Refuse(w, apierr.ReceiptsUnread)
		return
	}
	if list == nil {
		list = []audit.Receipt{}
	}
	replyRead(w, r, list)
}

// AnswerRequest is a device's answer: the agent's answer request and, for
// the second tap of "always allow", the confirmation token (D7).
type AnswerRequest struct {
	wire.AnswerRequest
	Confirm string `json:"confirm,omitempty"`
}

// ConfirmReply is the body of 428 confirm-always: tap again with the
// token to apply the answer. Its error is the table's row.
type ConfirmReply struct {
	apierr.ErrorBody
	Confirm string      `json:"confirm"`
	Expires time.Time   `json:"expires"`
	Scope   *wire.Scope `json:"scope,omitempty"`
}

// noSuchWrite answers a write name the API does not have.
func (a *API) noSuchWrite(w http.ResponseWriter, r *http.Request, c *call) {
	refuseNoSuchWrite(w, r.PathValue("write"))
}

func refuseNoSuchWrite(w http.ResponseWriter, name string) {
	var names []string
	for _, wr := range wire.Writes() {
		names = append(names, wr.Name)
	}
	apierr.Refuse(w, apierr.NoSuchWrite, name, strings.Join(names, ", "))
}

// write runs a write that passed the gate (D6): the request is checked
// and forwarded, and recorded either way.
func (a *API) write(w http.ResponseWriter, r *http.Request, c *call) {
	d, agent, name := c.dev, c.agent, c.write
	refuse := func(req wire.WriteRequest, why apierr.Reason, args ...any) { c.refuse(w, req, why, args...) }
	wr, err := wire.WriteNamed(name)
	if err != nil {
		a.noSuchWrite(w, r, c)
		return
	}
	if wr.Name == wire.AnswerWrite {
		a.answer(w, r, d, agent, wr, refuse)
		return
	}
	req := wr.New()
	if err := decodeRequest(r, wr, req, req); err != nil {
		refuse(nil, bodyRefusal(err), err.Error())
		return
	}
	a.forward(w, r.Context(), d, agent, wr, req, nil)
}

func (a *API) answer(w http.ResponseWriter, r *http.Request, d store.Device, agent string, wr wire.Write, refuse func(wire.WriteRequest, apierr.Reason, ...any)) {
	var req AnswerRequest
	if err := decodeRequest(r, wr, &req, &req.AnswerRequest); err != nil {
		refuse(nil, bodyRefusal(err), err.Error())
		return
	}
	ans := &req.AnswerRequest
	// A question decided here stays decided after it leaves the agent's
	// snapshot: the second device is told who answered, and when (D9).
	qkey := decisionKey(agent, ans.Conversation, wire.Question{ID: ans.Question})
	if prev, ok := a.decided.get(qkey); ok {
		refuse(ans, apierr.AlreadyDecided, prev.DeviceName, prev.At.Format(time.RFC3339))
		return
	}
	q, ok := a.question(agent, ans.Conversation, ans.Question)
	if !ok {
		refuse(ans, apierr.NoQuestion)
		return
	}
	if q.Revision != ans.Revision {
		refuse(ans, apierr.StaleRevision, q.Revision, ans.Revision)
		return
	}
	key := decisionKey(agent, ans.Conversation, q)
	if ans.Always {
		if !q.AllowAlways {
			refuse(ans, apierr.NoAlwaysAllow)
			return
		}
		c := confirmation{device: d.ID, agent: agent, conversation: ans.Conversation, question: ans.Question, option: strings.Join(ans.OptionIDs, ","), revision: ans.Revision}
		if req.Confirm == "" {
			tok, exp := a.decided.offer(c)
			reply := apierr.New(apierr.ConfirmAlways)
			var cr ConfirmReply
			cr.ErrorBody = reply.Body()
			cr.Confirm, cr.Expires, cr.Scope = tok, exp, q.AlwaysScope
			writeJSON(w, reply.Status, cr)
			return
		}
		if err := a.decided.redeem(req.Confirm, c); err != nil {
			why := apierr.ConfirmExpired
			if errors.Is(err, errConfirmMismatch) {
				why = apierr.ConfirmMismatch
			}
			refuse(ans, why)
			return
		}
	}
	if prev, ok := a.decided.reserve(key); !ok {
		refuse(ans, apierr.AlreadyDecided, prev.DeviceName, prev.At.Format(time.RFC3339))
		return
	}
	dec := &Decision{Device: d.ID, DeviceName: d.Name, At: a.o.Now().UTC(), RequestID: ans.RequestID}
	if !a.forward(w, r.Context(), d, agent, wr, ans, dec) {
		dec = nil
	}
	a.decided.settle(key, dec)
	if dec != nil && qkey != key {
		a.decided.settle(qkey, dec)
	}
}

// question finds an open question in what the bridge holds.
func (a *API) question(agent, conversation, id string) (wire.Question, bool) {
	for _, av := range a.o.Backend.View() {
		if av.Name != agent || av.Snapshot == nil {
			continue
		}
		for _, sp := range av.Snapshot.Spaces {
			for _, tab := range sp.Tabs {
				for _, c := range tab.Conversations {
					if c.ID != conversation {
						continue
					}
					for _, q := range c.Questions {
						if q.ID == id {
							return q, true
						}
					}
				}
			}
		}
	}
	return wire.Question{}, false
}

// forward sends req, a request of the write wr, to the agent at the
// write's route, and replies to the device. It reports whether the agent took
// the write.
func (a *API) forward(w http.ResponseWriter, ctx context.Context, d store.Device, agent string, wr wire.Write, req wire.WriteRequest, dec *Decision) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var out Outcome
	if a.o.Audit != nil {
		out = a.o.Audit.Begin(d, agent, wr.Name, req)
	}
	reply, err := a.o.Backend.Forward(ctx, agent, wr.Path, req)
	// The reply to the device: the agent's own refusal as it gave it, or
	// the table's row. The audit line's reason is the sentence it got.
	result, reason, answer := "ok", "", func() {}
	var ref *wire.Refused
	switch {
	case err == nil:
	case errors.As(err, &ref):
		result, reason, answer = "refused", err.Error(), func() { apierr.Relay(w, ref, err) }
	case errors.Is(err, ErrUnknownAgent):
		reply := apierr.New(apierr.UnknownAgent, agent)
		result, reason, answer = "refused", reply.Message, func() { reply.Write(w) }
	default:
		reply := apierr.New(apierr.AgentUnreachable, err.Error())
		result, reason, answer = "failed", reply.Message, func() { reply.Write(w) }
	}
	if out != nil {
		out.End(result, reason)
	}
	if err != nil {
		answer()
		return false
	}
	writeJSON(w, http.StatusOK, struct {
		*wire.WriteReply
		Decision *Decision `json:"decision,omitempty"`
	}{reply, dec})
	return true
}

// ErrUnknownAgent is what Backend.Forward returns for an agent that is not
// attached.
var ErrUnknownAgent = errors.New("no durable agent of that name is attached")

// bodyTooLarge is a body over its route's cap, limit bytes: it is refused
// with 413 body-too-large (bodyRefusal), any other fault of a body with 400.
type bodyTooLarge struct{ limit int }

func (e bodyTooLarge) Error() string {
	return fmt.Sprintf("the request is larger than %d bytes; send less", e.limit)
}

// bodyRefusal is the status and code that refuse a body for err, an
// error of decodeRequest or decodeBody.
func bodyRefusal(err error) apierr.Reason {
	if errors.As(err, new(bodyTooLarge)) {
		return apierr.BodyTooLarge
	}
	return apierr.BadRequest
}

// decodeRequest reads a write's body into v, capped and with the closed
// schema, and checks req, the write's request in v (v itself, or the
// protocol's request a device's answer embeds), by its registry row.
func decodeRequest(r *http.Request, wr wire.Write, v any, req wire.WriteRequest) error {
	err := wire.ReadRequest(r.Body, r.ContentLength, wire.WriteCap, v)
	if errors.Is(err, wire.ErrBodyTooLarge) {
		return bodyTooLarge{wire.WriteCap}
	}
	if err != nil {
		return err
	}
	return wr.Check(req)
}

// bodyCap is the largest body of a route that is not a write (pairing).
const bodyCap = 16 << 10

func decodeBody(r *http.Request, v any) error {
	data, err := wire.ReadCapped(r.Body, r.ContentLength, bodyCap)
	if errors.Is(err, wire.ErrTooLarge) {
		return bodyTooLarge{bodyCap}
	}
	if err != nil {
		return fmt.Errorf("the request body could not be read (%v); send it again", err)
	}
	if err := jsonstrict.Unmarshal(data, v); err != nil {
		return fmt.Errorf("the request body is not the JSON this route takes (%v); see the device API in collie(1)", err)
	}
	return nil
}

// writeJSON writes a reply; an error reply goes through apierr.
func writeJSON(w http.ResponseWriter, status int, v any) { apierr.JSON(w, status, v) }

// healthz answers that the bridge's device API is reachable at the
// address asked for (the Host check ran first), and nothing more: collie
// doctor fetches it through public_url. No state, no version, no names.
func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write([]byte(view.HealthzBody))
}
