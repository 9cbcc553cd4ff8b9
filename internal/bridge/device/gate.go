package device

import (
	"context"
	"github.com/collie-linux/collie/internal/bridge/device/policy"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"net/http"
	"strings"

	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/protocol/bearer"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// WriteHeader must be on every write, pairing included. A browser cannot
// add it to a cross-site request without a CORS preflight, which this
// server never grants, so a page on another site cannot make a device's
// browser write (D6). Clients outside a browser simply send it.
const WriteHeader = "Collie-Write"

// CookieName carries the credential for the web app. It is HttpOnly and
// SameSite=Strict, so other sites' pages never send it.
const CookieName = "collie_device"

type ctxKey struct{}

// deviceOf returns the device a request was authenticated as.
func deviceOf(ctx context.Context) store.Device {
	d, _ := ctx.Value(ctxKey{}).(store.Device)
	return d
}

// credential reads the device credential from the Authorization header
// (bearer.Token, the one parser of it) or the web app's cookie.
func credential(r *http.Request) string {
	if tok, ok := bearer.Token(r.Header); ok {
		return tok
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return c.Value
	}
	return ""
}

// router is the only way a route is added to the device API. A read is
// GET only; every other method goes through write, which puts the write
// gate in front of the handler: a state-changing route outside the gate
// cannot be registered. ServeHTTP refuses a request for another host
// before any route (the one Host check: the gate relies on it), and refuses a state-changing method on a route the
// gate does not guard (TestEveryWriteIsGated walks the routes).
type router struct {
	a      *API
	mux    *http.ServeMux
	routes []route
	gated  map[string]bool // patterns
	agent  map[string]bool // patterns of the agent surface
}

type route struct {
	pattern string
	gated   bool
	agent   bool   // the agent surface's: its own credentials, never a page's
	write   string // a gated route's write, as refusals and the audit log name it
}

func newRouter(a *API) *router {
	return &router{a: a, mux: http.NewServeMux(), gated: map[string]bool{}, agent: map[string]bool{}}
}

// agentRoute registers a route of the agent surface (loginwire.Routes,
// served by h). Its callers are programs with their own
// credentials (the platform's assertion, a grant, a token), never a
// device's cookie, and never a web page: a request that carries an
// Origin (any browser's cross-origin or same-origin write) is refused
// before h, and each source is rate-limited.
func (rt *router) agentRoute(pattern string, h http.Handler) {
	rt.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" || r.Header.Get("Sec-Fetch-Site") != "" {
			rt.a.refuseRequest(w, r, apierr.CrossSiteAgent)
			return
		}
		if ok, wait := rt.a.srcAgent.Take(policy.Source(r)); !ok {
			limit, when := rt.a.srcAgent.Refusal(w, wait)
			apierr.Refuse(w, apierr.RateLimitedSource, limit, when)
			return
		}
		h.ServeHTTP(w, r)
	}))
	rt.routes = append(rt.routes, route{pattern: pattern, agent: true})
	rt.agent[pattern] = true
}

// read registers a GET route (HEAD comes with it). It has no gate: reads
// change nothing; the Host check covers them.
func (rt *router) read(pattern string, h http.Handler) {
	if !strings.HasPrefix(pattern, "GET ") {
		panic("device: a read route is GET only, not " + pattern)
	}
	rt.mux.Handle(pattern, h)
	rt.routes = append(rt.routes, route{pattern: pattern})
}

// write registers a POST (or DELETE) route behind the write gate.
func (rt *router) write(pattern string, spec gateSpec, h gatedFunc) {
	if !strings.HasPrefix(pattern, "POST ") && !strings.HasPrefix(pattern, "DELETE ") {
		panic("device: a write route is POST or DELETE, not " + pattern)
	}
	rt.mux.Handle(pattern, rt.a.gate(spec, h))
	rt.routes = append(rt.routes, route{pattern: pattern, gated: true, write: spec.write})
	rt.gated[pattern] = true
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, err := rt.a.site.Front(r)
	if err != nil {
		apierr.Refuse(w, apierr.BadForwarded, rt.a.site.ProxyHeaderNames())
		return
	}
	if !rt.a.site.HostOK(r) {
		rt.a.refuseRequest(w, r, apierr.WrongHost)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		// A browser sends Origin on a read only when another origin's
		// page asks (CORS): that page gets nothing. Writes are the gate's.
		if r.Header.Get("Origin") != "" && !rt.a.site.OriginOK(r) {
			rt.a.refuseRequest(w, r, apierr.CrossSiteRead)
			return
		}
	default:
		if _, pattern := rt.mux.Handler(r); !rt.gated[pattern] && !rt.agent[pattern] {
			apierr.Refuse(w, apierr.MethodNotAllowed, r.Method)
			return
		}
	}
	rt.mux.ServeHTTP(w, r)
}

// gateSpec says what a route's gate asks for.
type gateSpec struct {
	write  string          // the write's name ("answer", …, or "pair"), as refusals record it
	paired bool            // a paired device's credential is needed
	source *policy.Limiter // the per-source rate for this route
}

// gatedFunc is a handler behind the gate, with the call's context.
type gatedFunc func(w http.ResponseWriter, r *http.Request, c *call)

// call is one request that passed the gate.
type call struct {
	a      *API
	source string
	dev    store.Device
	agent  string
	write  string
}

// refuse answers a refused write with reason's row (args fill it in) and
// records it: coalesced per source and kind, so a flood cannot rotate the
// audit log away. req is the write's request, nil before it was read.
func (c *call) refuse(w http.ResponseWriter, req wire.WriteRequest, reason apierr.Reason, args ...any) {
	c.refuseAs(w, c.dev.ID, req, reason, args...)
}

func (c *call) refuseAs(w http.ResponseWriter, device string, req wire.WriteRequest, reason apierr.Reason, args ...any) {
	reply := apierr.Refuse(w, reason, args...)
	c.a.refusals.add(refusal{source: c.source, Refusal: Refusal{Device: device, Agent: c.agent, Write: c.write, Req: req, Code: string(reply.Code), Reason: reply.Message}})
}

// refuseRequest answers a request refused before any route or write with
// reason's row, and records it (to the journal: it is no write).
func (a *API) refuseRequest(w http.ResponseWriter, r *http.Request, reason apierr.Reason) {
	reply := apierr.Refuse(w, reason)
	a.refusals.add(refusal{source: policy.Source(r), Refusal: Refusal{Code: string(reply.Code), Reason: reply.Message}})
}

// gate is the write gate (D6), in front of every state-changing route.
// The router has refused a request for another host before any route
// (421 wrong-host); the gate then asks:
//
//  1. the request is from this site's own page: Origin on the site's list
//     (or none, from a client outside a browser), and the header
//     Collie-Write: 1 (403 cross-site). These come before any limit, so a
//     cross-site page in the device's own browser uses up nothing;
//  2. the source's rate (429 rate-limited);
//  3. where needed, a paired device's credential (401 not-paired, or
//     revoked for a revoked device's: whyUnpaired),
//     authenticated and registered in one step, so a revoke cuts the
//     request off;
//  4. the device's rate (429 rate-limited).
//
// Every refusal is recorded through refusals: the first of a kind at
// once, repeats counted. Who a refused credential belongs to is looked up
// once, and only for a refusal: a write that passes never pays for it.
func (a *API) gate(spec gateSpec, next gatedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := &call{a: a, source: policy.Source(r), agent: r.PathValue("agent"), write: spec.write}
		cred := credential(r)
		// who names the device a refusal before the credential's check is
		// recorded as (none for a route that takes no credential).
		who := func() string {
			if !spec.paired {
				return store.NoDevice
			}
			return a.identify(cred)
		}
		if !a.site.OriginOK(r) || r.Header.Get(WriteHeader) != "1" {
			c.refuseAs(w, who(), nil, apierr.CrossSiteWrite)
			return
		}
		if ok, wait := spec.source.Take(c.source); !ok {
			limit, when := spec.source.Refusal(w, wait)
			c.refuseAs(w, who(), nil, apierr.RateLimitedSource, limit, when)
			return
		}
		if spec.paired {
			d, _, ctx, leave, ok := a.feed.enter(r.Context(), cred, false)
			if !ok {
				dev, why := a.whyUnpaired(cred)
				c.refuseAs(w, dev, nil, why)
				return
			}
			defer leave()
			c.dev = d
			if ok, wait := a.writes.Take(d.ID); !ok {
				limit, when := a.writes.Refusal(w, wait)
				c.refuse(w, nil, apierr.RateLimitedDevice, limit, when)
				return
			}
			r = r.WithContext(context.WithValue(ctx, ctxKey{}, d))
		}
		next(w, r, c)
	})
}
