package device

import (
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// port is the fixture server's port.
func (f *fixture) port(t *testing.T) string {
	t.Helper()
	_, port, err := net.SplitHostPort(f.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// routePaths are the fixture's routes as requests: each pattern's method
// and a path that matches it.
func routePaths(a *API) (out [][2]string) {
	for _, r := range a.routes().routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		path = strings.NewReplacer("{agent}", "demo", "{write}", "frobnicate").Replace(path)
		out = append(out, [2]string{method, path})
	}
	return out
}

// TestHostRefusedBeforeAnyRoute: a request for another host name, as a
// DNS-rebinding page makes with its own origin and the bridge's address,
// gets 421 and nothing else on every route, reads and the web app
// included; nothing reaches an agent, and nothing is paired (D6).
func TestHostRefusedBeforeAnyRoute(t *testing.T) {
	f := newFixture(t)
	port := f.port(t)
	p, _ := f.pairs.New()
	paths := append(routePaths(f.api), [2]string{"GET", "/app.js"}, [2]string{"GET", "/index.html"})
	for _, host := range []string{"rebind.invalid:" + port, "127.0.0.1.nip.io:" + port, "127.0.0.2:" + port, "127.0.0.1:" + port + "0"} {
		for _, mp := range paths {
			t.Run(host+mp[1]+"_"+mp[0], func(t *testing.T) {
				body := `{"requestId":"r","conversation":"c","text":"hi"}`
				if mp[1] == "/api/v1/pair" {
					body = `{"secret":"` + p.Secret + `","name":"evil"}`
				}
				req, _ := http.NewRequest(mp[0], f.srv.URL+mp[1], strings.NewReader(body))
				req.Host = host
				req.Header.Set("Authorization", "Bearer "+f.cred)
				req.Header.Set(WriteHeader, "1")
				req.Header.Set("Origin", "http://"+host)                      // same-origin, for the page
				resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req) // a stream served would not end
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMisdirectedRequest || !strings.Contains(string(b), `"wrong-host"`) {
					t.Fatalf("%s %s for %s: %d %s", mp[0], mp[1], host, resp.StatusCode, b)
				}
			})
		}
	}
	if f.back.count() != 0 || len(f.store.List()) != 1 {
		t.Fatalf("a request for another host did something: %d writes, %d devices", f.back.count(), len(f.store.List()))
	}
	// The pairing secret was not used up by the refused request.
	if status, b := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"x"}`, writeHdr); status != 200 {
		t.Fatalf("the real pairing after the rebinding page: %d %s", status, b)
	}
}

// TestEveryWriteIsGated walks the device API's routes: every route that
// takes a state-changing method is behind the write gate, the gated routes
// are exactly the registry's writes and the device API's own, each gated
// under its own write's name (refusals and the audit log show it), and a probe of
// each route with each such method, with a paired device's credential but
// without the write header, is refused by the gate or has no such route;
// nothing reaches an agent or pairs. Nothing in the package adds a route
// but the router (D6).
func TestEveryWriteIsGated(t *testing.T) {
	f := newFixture(t)
	rt := f.api.routes()
	// The gated routes and the write each names (as refusals and the
	// audit log record it), from the protocol's registry and the four
	// writes of the device API's own: pairing, a device's push
	// subscription (POST and DELETE), and an unknown write's name.
	want := map[string]string{
		"POST /api/v1/pair":                   "pair",
		"POST /api/v1/push/subscription":      "push.subscribe",
		"DELETE /api/v1/push/subscription":    "push.unsubscribe",
		"POST /api/v1/agents/{agent}/{write}": unknownWrite,
	}
	for _, wr := range wire.Writes() {
		want["POST /api/v1/agents/{agent}/"+wr.Name] = wr.Name
	}
	got := map[string]string{}
	for _, r := range rt.routes {
		method, _, _ := strings.Cut(r.pattern, " ")
		switch {
		case r.gated:
			got[r.pattern] = r.write
		case method != "GET" && !r.agent:
			t.Errorf("D6: %s changes state outside the write gate", r.pattern)
		}
	}
	for pattern, write := range want {
		if got[pattern] != write {
			t.Errorf("D6: %s is gated as write %q, want %q", pattern, got[pattern], write)
		}
	}
	for pattern, write := range got {
		if _, ok := want[pattern]; !ok {
			t.Errorf("D6: %s is gated as write %q, which is no write of the registry or the device API", pattern, write)
		}
	}
	p, _ := f.pairs.New()
	for _, mp := range routePaths(f.api) {
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			body := `{"requestId":"r","conversation":"c","text":"hi"}`
			if mp[1] == "/api/v1/pair" {
				body = `{"secret":"` + p.Secret + `","name":"x"}`
			}
			status, b := f.do(t, method, mp[1], f.cred, body, nil)
			var eb wire.ErrorBody
			json.Unmarshal([]byte(b), &eb)
			if !(status == 403 && eb.Error.Code == "cross-site" || status == 405) {
				t.Errorf("D6: %s %s without the write header: %d %s", method, mp[1], status, b)
			}
		}
	}
	if f.back.count() != 0 || len(f.store.List()) != 1 {
		t.Fatalf("D6: a probe got through: %d writes, %d devices", f.back.count(), len(f.store.List()))
	}
	// No route is added but through the router.
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			fn, ok := n.(*ast.FuncDecl)
			if !ok {
				return true
			}
			ast.Inspect(fn, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if ok && (sel.Sel.Name == "Handle" || sel.Sel.Name == "HandleFunc") {
					recv := ""
					if fn.Recv != nil && len(fn.Recv.List) == 1 {
						if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
							recv = star.X.(*ast.Ident).Name
						}
					}
					if recv != "router" {
						t.Errorf("D6: %s adds a route in %s, not through the router: %s", name, fn.Name.Name, fset.Position(call.Pos()))
					}
				}
				return true
			})
			return false
		})
	}
}

// serve sends a request straight to the API's handler, from a given
// client address, as the listener would.
func (f *fixture) serve(t *testing.T, remote, method, path, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, "http://"+f.srv.Listener.Addr().String()+path, strings.NewReader(body))
	req.RemoteAddr = remote
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	f.api.Handler().ServeHTTP(w, req)
	return w.Code, w.Body.String()
}

// TestPairGate: pairing passes the write gate. A page on another site in
// the same browser cannot use up the pairing budget, so a real pairing
// goes through after its flood; the limit is per source (an IPv6 /64 is
// one), so one client's flood does not keep another's pairing at 429;
// refused pairings go to the journal, not the audit log.
func TestPairGate(t *testing.T) {
	f := newFixture(t)
	lines := f.audit.count()
	for i := 0; i < 50; i++ {
		for _, hdr := range []map[string]string{
			{"Origin": "http://evil.invalid"},                    // a form or a simple fetch
			{"Origin": "http://evil.invalid", WriteHeader: "1"},  // if a browser ever let it through
			{"Sec-Fetch-Site": "cross-site", WriteHeader: "1"},   // an Origin-less cross-site request
			{"Origin": "http://127.0.0.1:" + f.port(t) + "0"},    // another port on this machine
			{"Origin": "http://localhost:" + f.port(t), "X": ""}, // this site, without the header
		} {
			status, b := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"guess","name":"evil"}`, hdr)
			if status != 403 || !strings.Contains(b, `"cross-site"`) {
				t.Fatalf("cross-site pairing %v: %d %s", hdr, status, b)
			}
		}
	}
	p, _ := f.pairs.New()
	if status, b := f.do(t, "POST", "/api/v1/pair", "", `{"secret":"`+p.Secret+`","name":"real"}`, map[string]string{WriteHeader: "1", "Origin": "http://localhost:" + f.port(t)}); status != 200 {
		t.Fatalf("the real pairing after a cross-site flood: %d %s", status, b)
	}

	guess := `{"secret":"guess","name":"x"}`
	for i := 0; i < 5; i++ {
		if status, b := f.serve(t, "192.0.2.1:4000", "POST", "/api/v1/pair", guess, writeHdr); status != 403 || !strings.Contains(b, "pairing-refused") {
			t.Fatalf("guess %d: %d %s", i, status, b)
		}
	}
	if status, _ := f.serve(t, "192.0.2.1:4001", "POST", "/api/v1/pair", guess, writeHdr); status != 429 {
		t.Fatalf("the sixth guess from one address: %d, want 429", status)
	}
	p, _ = f.pairs.New()
	if status, b := f.serve(t, "192.0.2.2:4000", "POST", "/api/v1/pair", `{"secret":"`+p.Secret+`","name":"other"}`, writeHdr); status != 200 {
		t.Fatalf("a pairing from another address while one floods: %d %s", status, b)
	}
	for i := 0; i < 5; i++ {
		f.serve(t, "[2001:db8::1]:4000", "POST", "/api/v1/pair", guess, writeHdr)
	}
	if status, _ := f.serve(t, "[2001:db8::2]:4000", "POST", "/api/v1/pair", guess, writeHdr); status != 429 {
		t.Fatalf("another address of the same IPv6 /64: %d, want 429", status)
	}
	f.api.refusals.flushAll()
	if f.audit.count() != lines {
		t.Fatalf("refused pairings reached the audit log: %v", f.audit.all()[lines:])
	}
}

// TestRefusedCredentialsAudited: a write with a forged or revoked
// credential, or none, is a refused write and has its line: the device is
// "unknown", the revoked device's id, or none; the credential is never in
// it (A1).
func TestRefusedCredentialsAudited(t *testing.T) {
	f := newFixture(t)
	laptop, laptopID := f.pair(t, "laptop")
	if err := f.api.Revoke(laptopID); err != nil {
		t.Fatal(err)
	}
	forged := "forged-" + strings.Repeat("A", 40)
	send := `{"requestId":"r1","conversation":"c","text":"hi"}`
	tests := []struct {
		name, cred, device, code string
	}{
		{"A1_forged", forged, store.UnknownDevice, CodeNotPaired},
		{"A1_revoked", laptop, laptopID, CodeRevoked},
		{"A1_none", "", store.NoDevice, CodeNotPaired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.audit.count()
			if status, _ := f.do(t, "POST", "/api/v1/agents/demo/send", tt.cred, send, writeHdr); status != 401 {
				t.Fatalf("status %d, want 401", status)
			}
			lines := f.audit.all()[before:]
			want := tt.device + " demo send refused " + tt.code + ": "
			if len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
				t.Fatalf("audit lines %q, want one beginning %q", lines, want)
			}
		})
	}
	// Repeats are counted, not lost, and not written one by one.
	before := f.audit.count()
	for i := 0; i < 30; i++ {
		f.do(t, "POST", "/api/v1/agents/demo/send", forged, send, writeHdr)
	}
	if f.audit.count() != before {
		t.Fatalf("repeats were written one by one: %q", f.audit.all()[before:])
	}
	f.api.Close()
	lines := f.audit.all()[before:]
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "unknown demo send refused not-paired") || !strings.HasSuffix(lines[0], "count=30") {
		t.Fatalf("the count of 30 repeats: %q", lines)
	}
	for _, l := range f.audit.all() {
		if strings.Contains(l, forged) || strings.Contains(l, laptop) {
			t.Fatalf("a credential is in the audit log: %q", l)
		}
	}
	if f.back.count() != 0 {
		t.Fatal("a refused write reached the agent")
	}
}

// TestReadsShowViews: whoami shows the device's view, and no read route
// shows a credential's hash.
func TestReadsShowViews(t *testing.T) {
	f := newFixture(t)
	status, b := f.do(t, "GET", "/api/v1/whoami", f.cred, "", nil)
	var got map[string]any
	if err := json.Unmarshal([]byte(b), &got); status != 200 || err != nil {
		t.Fatalf("whoami: %d %s", status, b)
	}
	keys := slices.Sorted(maps.Keys(got))
	if !slices.Equal(keys, []string{"id", "lastSeen", "name", "pairedAt"}) || got["id"] != f.devID || got["name"] != "phone" {
		t.Fatalf("whoami shows %v", got)
	}
	d, _ := f.store.Get(f.devID)
	for _, mp := range routePaths(f.api) {
		if mp[0] != "GET" || mp[1] == "/api/v1/events" {
			continue
		}
		_, b := f.do(t, "GET", mp[1], f.cred, "", nil)
		if strings.Contains(b, "credHash") || strings.Contains(b, d.CredHash) {
			t.Errorf("GET %s shows the credential's hash: %s", mp[1], b)
		}
	}
	data, _ := os.ReadFile(f.path)
	if strings.Contains(string(data), f.cred) {
		t.Fatal("the devices file holds a credential")
	}
}
