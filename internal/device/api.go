package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/audit"
	"github.com/collie-linux/collie/internal/control"
	"github.com/collie-linux/collie/internal/device/web"
	"github.com/collie-linux/collie/internal/upstream"
	"github.com/collie-linux/collie/internal/wire"
)

// Backend is what the device API needs from the bridge.
type Backend interface {
	// View is what the bridge holds, after cleaning.
	View() []control.AgentView
	// Forward sends a write to the named agent. Only the device API calls
	// it: nothing in the bridge answers on behalf of an agent, a hook or
	// model output (D6).
	Forward(ctx context.Context, agent, path string, req wire.Request) (*wire.WriteReply, error)
	// SetWatching says whether a device is looking (K8).
	SetWatching(on bool)
}

// Recorder writes the audit log: every write a device asks for, carried
// out or refused (A1–A5). write is the write's name ("answer", "send", …);
// req is nil when the request was refused before it could be read.
type Recorder interface {
	Write(dev Device, agent, write string, req wire.Request, result string, reason string)
	// Receipts lists a device's receipts since a time (A6).
	Receipts(device string, since time.Time) ([]audit.Receipt, error)
}

// Options configure the device API.
type Options struct {
	Backend  Backend
	Store    *Store
	Pairings *Pairings
	Audit    Recorder // nil: no audit (tests)
	Log      *slog.Logger
	Now      func() time.Time
}

// API serves the device API, /api/v1/.
type API struct {
	o       Options
	feed    *feed
	decided *decisions
	writes  *limiter // per device
	pairs   *limiter // for everyone: pairing attempts
}

// NewAPI returns the device API.
func NewAPI(o Options) *API {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &API{
		o:       o,
		feed:    newFeed(o.Backend.SetWatching),
		decided: newDecisions(o.Now),
		writes:  newLimiter(5, 20, o.Now),
		pairs:   newLimiter(0.2, 5, o.Now),
	}
}

// Changed tells open event streams that the bridge's state changed.
func (a *API) Changed() { a.feed.changed() }

// Revoke cuts a device off: its credential stops working and its live
// event streams end at once.
func (a *API) Revoke(id string) error {
	if err := a.o.Store.Revoke(id); err != nil {
		return err
	}
	a.feed.cut(id)
	return nil
}

// writeRoutes maps the device API's write names to the agent's routes.
var writeRoutes = map[string]string{
	"answer":  wire.AnswerPath,
	"send":    wire.SendPath,
	"abort":   wire.AbortPath,
	"action":  wire.ActionPath,
	"rename":  wire.RenamePath,
	"close":   wire.ClosePath,
	"reopen":  wire.ReopenPath,
	"starter": wire.StarterPath,
}

// Handler returns the API's routes.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/pair", a.pair)
	mux.Handle("GET /api/v1/whoami", a.authed(http.HandlerFunc(a.whoami)))
	mux.Handle("GET /api/v1/state", a.authed(http.HandlerFunc(a.state)))
	mux.Handle("GET /api/v1/events", a.authed(http.HandlerFunc(a.events)))
	mux.Handle("GET /api/v1/receipts", a.authed(http.HandlerFunc(a.receipts)))
	mux.Handle("POST /api/v1/agents/{agent}/{write}", a.authed(http.HandlerFunc(a.write)))
	mux.Handle("GET /", web.Handler()) // the web app (internal/device/web)
	return mux
}

// authed lets through only requests with a paired device's credential.
func (a *API) authed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := a.o.Store.Authenticate(credential(r))
		if !ok {
			apiError(w, http.StatusUnauthorized, "not-paired", "this device is not paired, or was revoked; pair it again with: collie pair")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, d)))
	})
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

func (a *API) pair(w http.ResponseWriter, r *http.Request) {
	if !a.pairs.allow("pair") {
		apiError(w, http.StatusTooManyRequests, "rate-limited", "too many pairing attempts; wait a minute and try again")
		return
	}
	var req PairRequest
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, wire.CodeBadRequest, err.Error())
		return
	}
	if err := a.o.Pairings.Redeem(req.Secret); err != nil {
		a.o.Log.Warn("a pairing attempt was refused", "reason", err.Error())
		apiError(w, http.StatusForbidden, "pairing-refused", err.Error())
		return
	}
	d, cred, err := a.o.Store.Add(req.Name)
	if err != nil {
		apiError(w, http.StatusInternalServerError, "internal", "the bridge could not save the device; see journalctl --user -u collie")
		a.o.Log.Error("save a paired device", "err", err)
		return
	}
	a.o.Log.Info("a device was paired", "device", d.ID, "name", d.Name)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cred, Path: "/api/", HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: 400 * 24 * 3600})
	writeJSON(w, http.StatusOK, PairReply{DeviceID: d.ID, Credential: cred, Code: VerificationCode(req.Secret)})
}

func (a *API) whoami(w http.ResponseWriter, r *http.Request) {
	d := deviceOf(r.Context())
	d.CredHash = ""
	writeJSON(w, http.StatusOK, d)
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
			apiError(w, http.StatusBadRequest, wire.CodeBadRequest, "since must be a time like 2026-12-02T10:00:00Z")
			return
		}
		since = t
	}
	list, err := a.o.Audit.Receipts(deviceOf(r.Context()).ID, since)
	if err != nil {
		a.o.Log.Error("read receipts", "err", err)
		apiError(w, http.StatusInternalServerError, "internal", "the bridge could not read the receipts; see journalctl --user -u collie")
		return
	}
	if list == nil {
		list = []audit.Receipt{}
	}
	writeJSON(w, http.StatusOK, list)
}

// State is the reply to GET /api/v1/state.
type State struct {
	Agents []control.AgentView `json:"agents"`
}

func (a *API) state(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, State{Agents: a.o.Backend.View()})
}

// events is the change feed: server-sent events, one "change" event each
// time the bridge's state changes, so a device learns of it at once and
// then reads /api/v1/state.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		apiError(w, http.StatusInternalServerError, "internal", "streaming is not supported here")
		return
	}
	s, ctx, done := a.feed.open(r.Context(), deviceOf(r.Context()).ID)
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "event: change\ndata: {}\n\n")
	fl.Flush()
	keep := time.NewTicker(25 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.notify:
			fmt.Fprint(w, "event: change\ndata: {}\n\n")
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		}
		fl.Flush()
	}
}

// AnswerRequest is a device's answer: the agent's answer request and, for
// the second tap of "always allow", the confirmation token (D7).
type AnswerRequest struct {
	wire.AnswerRequest
	Confirm string `json:"confirm,omitempty"`
}

// ConfirmReply is the body of 428 always-allow-confirm: tap again with the
// token to apply the answer.
type ConfirmReply struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Confirm string      `json:"confirm"`
	Expires time.Time   `json:"expires"`
	Scope   *wire.Scope `json:"scope,omitempty"`
}

// write is the write gate (D6): a paired device, a same-origin request with
// the write header, within the device's rate; then the request is checked
// and forwarded, and recorded either way.
func (a *API) write(w http.ResponseWriter, r *http.Request) {
	d := deviceOf(r.Context())
	agent, name := r.PathValue("agent"), r.PathValue("write")
	path, ok := writeRoutes[name]
	if !ok {
		apiError(w, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("there is no write called %q; use one of answer, send, abort, action, starter, rename, close, reopen", name))
		return
	}
	refuse := func(status int, code, msg string, req wire.Request) {
		if a.o.Audit != nil {
			a.o.Audit.Write(d, agent, name, req, "refused", msg)
		}
		apiError(w, status, code, msg)
	}
	if !sameOrigin(r) || r.Header.Get(WriteHeader) != "1" {
		refuse(http.StatusForbidden, "cross-site", "a write needs the "+WriteHeader+": 1 header from this bridge's own page", nil)
		return
	}
	if !a.writes.allow(d.ID) {
		refuse(http.StatusTooManyRequests, "rate-limited", "too many writes from this device; wait a few seconds", nil)
		return
	}
	if name == "answer" {
		a.answer(w, r, d, agent, refuse)
		return
	}
	req, _ := wire.NewRequest(path) // path is from writeRoutes
	if err := decodeRequest(r, req); err != nil {
		refuse(http.StatusBadRequest, wire.CodeBadRequest, err.Error(), nil)
		return
	}
	a.forward(w, r.Context(), d, agent, name, req, nil)
}

func (a *API) answer(w http.ResponseWriter, r *http.Request, d Device, agent string, refuse func(int, string, string, wire.Request)) {
	var req AnswerRequest
	if err := decodeRequest(r, &req); err != nil {
		refuse(http.StatusBadRequest, wire.CodeBadRequest, err.Error(), nil)
		return
	}
	ans := &req.AnswerRequest
	// A question decided here stays decided after it leaves the agent's
	// snapshot: the second device is told who answered, and when (D9).
	qkey := decisionKey(agent, ans.Conversation, wire.Question{ID: ans.Question})
	if prev, ok := a.decided.get(qkey); ok {
		refuse(http.StatusConflict, wire.CodeAlreadyDecided, fmt.Sprintf("this question was answered already, by %s at %s", prev.DeviceName, prev.At.Format(time.RFC3339)), ans)
		return
	}
	q, ok := a.question(agent, ans.Conversation, ans.Question)
	if !ok {
		refuse(http.StatusNotFound, wire.CodeUnknownQuestion, "there is no such open question; it may have been answered or withdrawn", ans)
		return
	}
	if q.Revision != ans.Revision {
		refuse(http.StatusConflict, wire.CodeStaleRevision, fmt.Sprintf("the question changed (revision %d, not %d); read it again before you answer", q.Revision, ans.Revision), ans)
		return
	}
	key := decisionKey(agent, ans.Conversation, q)
	if ans.Always {
		if !q.AllowAlways {
			refuse(http.StatusUnprocessableEntity, wire.CodeBadAnswer, "this question does not offer always allow", ans)
			return
		}
		c := confirmation{device: d.ID, agent: agent, conversation: ans.Conversation, question: ans.Question, option: strings.Join(ans.OptionIDs, ","), revision: ans.Revision}
		if req.Confirm == "" {
			tok, exp, err := a.decided.offer(c)
			if err != nil {
				apiError(w, http.StatusInternalServerError, "internal", "the bridge could not make a confirmation; try again")
				return
			}
			var cr ConfirmReply
			cr.Error.Code, cr.Error.Message = "confirm-always", "always allow lets every later call in this scope through unasked; tap again to confirm"
			cr.Confirm, cr.Expires, cr.Scope = tok, exp, q.AlwaysScope
			writeJSON(w, http.StatusPreconditionRequired, cr)
			return
		}
		if err := a.decided.redeem(req.Confirm, c); err != nil {
			refuse(http.StatusPreconditionRequired, "confirm-refused", err.Error(), ans)
			return
		}
	}
	if prev, ok := a.decided.reserve(key); !ok {
		refuse(http.StatusConflict, wire.CodeAlreadyDecided, fmt.Sprintf("this question was answered already, by %s at %s", prev.DeviceName, prev.At.Format(time.RFC3339)), ans)
		return
	}
	dec := &Decision{Device: d.ID, DeviceName: d.Name, At: a.o.Now().UTC(), RequestID: ans.RequestID}
	if !a.forward(w, r.Context(), d, agent, "answer", ans, dec) {
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

// forward sends the write called name to the agent and replies to the
// device. It reports whether the agent took the write.
func (a *API) forward(w http.ResponseWriter, ctx context.Context, d Device, agent, name string, req wire.Request, dec *Decision) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	reply, err := a.o.Backend.Forward(ctx, agent, writeRoutes[name], req)
	result, status, code := "ok", http.StatusOK, ""
	var ref *upstream.Refused
	switch {
	case err == nil:
	case errors.As(err, &ref):
		result, status, code = "refused", ref.Status, ref.Code
	case errors.Is(err, ErrUnknownAgent):
		result, status, code = "refused", http.StatusNotFound, wire.CodeUnknownTarget
	default:
		result, status, code = "failed", http.StatusBadGateway, "agent-unreachable"
	}
	if a.o.Audit != nil {
		reason := ""
		if err != nil {
			reason = err.Error()
		}
		a.o.Audit.Write(d, agent, name, req, result, reason)
	}
	if err != nil {
		apiError(w, status, code, err.Error())
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

func decodeRequest(r *http.Request, req wire.Request) error {
	err := wire.DecodeRequest(r.Body, r.ContentLength, req)
	if errors.Is(err, wire.ErrBodyTooLarge) {
		return fmt.Errorf("the request is larger than %d bytes; send less", wire.WriteCap)
	}
	return err
}

func decodeBody(r *http.Request, v any) error {
	data, err := wire.ReadCapped(r.Body, r.ContentLength, 16<<10)
	if err != nil {
		return errors.New("the request is too large")
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New("the request body is not the JSON this route takes; see the device API in collie(1)")
	}
	return nil
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	wire.WriteError(w, status, code, msg)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
