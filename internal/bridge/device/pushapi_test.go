package device

import (
	"context"
	"encoding/json"
	"github.com/collie-linux/collie/internal/bridge/device/apierr"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

const testVAPIDKey = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"

// subBody is a subscription as a page posts it.
func subBody(endpoint string) string {
	b, _ := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": testVAPIDKey, "auth": "BTBZMqHH6r4Tts7J_aSIgg"}})
	return string(b)
}

func (f *fixture) pushGet(t *testing.T, cred string) (int, PushReply) {
	t.Helper()
	status, body := f.do(t, "GET", "/api/v1/push", cred, "", nil)
	var r PushReply
	json.Unmarshal([]byte(body), &r)
	return status, r
}

func errCode(body string) string {
	var e apierr.ErrorBody
	json.Unmarshal([]byte(body), &e)
	return e.Error.Code
}

func endpoints(s *store.Store) map[string]string {
	out := map[string]string{}
	for _, t := range s.PushTargets() {
		out[t.Device] = t.Sub.Endpoint
	}
	return out
}

// TestPushRoutes_D6: a device reads the VAPID key and sets, reads and
// removes its own subscription, every write through the write gate; a
// second device sees nothing of the first's, cannot remove it and cannot
// take its endpoint over; a revoked device's subscription is dropped with
// it, in the file too; the subscriptions survive a restart.
func TestPushRoutes_D6(t *testing.T) {
	f := newFixture(t)
	f.api.o.WebPushKey = testVAPIDKey
	a := "https://push.example/sub/a"

	if status, r := f.pushGet(t, f.cred); status != 200 || r.PublicKey != testVAPIDKey || r.Endpoint != "" {
		t.Fatalf("GET /api/v1/push: %d %+v", status, r)
	}
	if status, body := f.do(t, "POST", "/api/v1/push/subscription", f.cred, subBody(a), writeHdr); status != 200 || !strings.Contains(body, `"subscribed":true`) {
		t.Fatalf("subscribe: %d %s", status, body)
	}
	if _, r := f.pushGet(t, f.cred); r.Endpoint != a {
		t.Fatalf("the device's endpoint reads as %q", r.Endpoint)
	}

	// Another device: sees nothing of it, removes nothing of it, cannot
	// take its endpoint.
	credB, idB := f.pair(t, "tablet")
	if _, r := f.pushGet(t, credB); r.Endpoint != "" {
		t.Fatalf("device B reads device A's endpoint %q", r.Endpoint)
	}
	if status, _ := f.do(t, "DELETE", "/api/v1/push/subscription", credB, "", writeHdr); status != 200 {
		t.Fatalf("device B's DELETE: %d", status)
	}
	if status, body := f.do(t, "POST", "/api/v1/push/subscription", credB, subBody(a), writeHdr); status != http.StatusConflict || errCode(body) != "push-endpoint-taken" {
		t.Fatalf("device B posting A's endpoint: %d %s", status, body)
	}
	b := "https://push.example/sub/b"
	if status, body := f.do(t, "POST", "/api/v1/push/subscription", credB, subBody(b), writeHdr); status != 200 {
		t.Fatalf("device B's own subscription: %d %s", status, body)
	}
	if got := endpoints(f.store); got[f.devID] != a || got[idB] != b || len(got) != 2 {
		t.Fatalf("subscriptions %v", got)
	}

	// A restart keeps them.
	again, err := store.OpenStore(f.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := endpoints(again); got[f.devID] != a || got[idB] != b {
		t.Fatalf("after a restart: %v", got)
	}

	// Revoking A drops its subscription, in memory and in the file; its
	// credential can no longer subscribe.
	if err := f.api.Revoke(f.devID); err != nil {
		t.Fatal(err)
	}
	if got := endpoints(f.store); len(got) != 1 || got[idB] != b {
		t.Fatalf("after revoking A: %v", got)
	}
	again, _ = store.OpenStore(f.path, nil)
	if got := endpoints(again); len(got) != 1 || got[idB] != b {
		t.Fatalf("the file after revoking A: %v", got)
	}
	if status, _ := f.do(t, "POST", "/api/v1/push/subscription", f.cred, subBody(a), writeHdr); status != http.StatusUnauthorized {
		t.Fatalf("a revoked device subscribed: %d", status)
	}
	if status, _ := f.pushGet(t, f.cred); status != http.StatusUnauthorized {
		t.Fatalf("a revoked device read the key: %d", status)
	}

	// B turns notifications off.
	if status, body := f.do(t, "DELETE", "/api/v1/push/subscription", credB, "", writeHdr); status != 200 || !strings.Contains(body, `"subscribed":false`) {
		t.Fatalf("B's DELETE: %d %s", status, body)
	}
	if got := endpoints(f.store); len(got) != 0 {
		t.Fatalf("after B's DELETE: %v", got)
	}
}

// TestPushRoutesGated_D6: the subscription's writes pass the write gate
// like any write: no write header or another site's Origin is 403
// cross-site, no credential is 401; a subscription that is not valid is
// 400; with Web Push off every route says so. Nothing is stored.
func TestPushRoutesGated_D6(t *testing.T) {
	f := newFixture(t)
	f.api.o.WebPushKey = testVAPIDKey
	good := subBody("https://push.example/sub/a")
	for _, c := range []struct {
		name, method, cred, body string
		hdr                      map[string]string
		status                   int
		code                     string
	}{
		{"no_write_header", "POST", f.cred, good, nil, 403, "cross-site"},
		{"other_origin", "POST", f.cred, good, map[string]string{WriteHeader: "1", "Origin": "https://evil.example"}, 403, "cross-site"},
		{"delete_no_write_header", "DELETE", f.cred, "", nil, 403, "cross-site"},
		{"not_paired", "POST", "", good, writeHdr, 401, "not-paired"},
		{"wrong_credential", "POST", "x" + f.cred[1:], good, writeHdr, 401, "not-paired"},
		{"delete_not_paired", "DELETE", "", "", writeHdr, 401, "not-paired"},
		{"http_endpoint", "POST", f.cred, subBody("http://push.example/x"), writeHdr, 400, "bad-subscription"},
		{"userinfo", "POST", f.cred, subBody("https://u:p@push.example/x"), writeHdr, 400, "bad-subscription"},
		{"unknown_member", "POST", f.cred, strings.Replace(good, `{`, `{"x":1,`, 1), writeHdr, 400, "bad-subscription"},
		{"too_large", "POST", f.cred, strings.Repeat(" ", webpush.MaxSubscriptionJSON+1) + good, writeHdr, 413, "bad-subscription"},
		{"put", "PUT", f.cred, good, writeHdr, 405, "method-not-allowed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := f.do(t, c.method, "/api/v1/push/subscription", c.cred, c.body, c.hdr)
			if status != c.status || errCode(body) != c.code {
				t.Fatalf("%d %s, want %d %s", status, body, c.status, c.code)
			}
			if n := len(f.store.PushTargets()); n != 0 {
				t.Fatalf("%d subscriptions stored", n)
			}
		})
	}
	if status, _ := f.pushGet(t, ""); status != http.StatusUnauthorized {
		t.Fatalf("GET /api/v1/push without a credential: %d", status)
	}
	f.api.o.WebPushKey = ""
	for _, m := range []string{"GET", "POST"} {
		path := "/api/v1/push"
		if m == "POST" {
			path += "/subscription"
		}
		if status, body := f.do(t, m, path, f.cred, good, writeHdr); status != 404 || errCode(body) != "push-off" {
			t.Fatalf("%s %s with Web Push off: %d %s", m, path, status, body)
		}
	}
}

// TestGoneDropsStoredSubscription: the device store is the Web Push
// provider's source: a push service answering 410 for a device's
// subscription drops it from devices.json, and the other device's stays.
func TestGoneDropsStoredSubscription(t *testing.T) {
	f := newFixture(t)
	_, idB := f.pair(t, "tablet")
	svc := pushtest.New(t, nil)
	p, err := webpush.New(webpush.Options{StateDir: t.TempDir(), Subscriptions: f.store, Client: svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	subs := map[string]*pushtest.Sub{}
	for _, id := range []string{f.devID, idB} {
		subs[id] = svc.Subscribe(t, p.PublicKey())
		s, err := webpush.DecodeSubscription(subs[id].JSON())
		if err != nil {
			t.Fatal(err)
		}
		if err := f.store.SetPushSubscription(id, s); err != nil {
			t.Fatal(err)
		}
	}
	svc.Answer(subs[f.devID], http.StatusGone)
	if err := p.Send(context.Background(), push.Message{Title: "q"}); err != nil {
		t.Fatal(err)
	}
	again, _ := store.OpenStore(filepath.Clean(f.path), nil)
	if got := endpoints(again); len(got) != 1 || got[idB] != subs[idB].Endpoint {
		t.Fatalf("after 410 for %s: %v", f.devID, got)
	}
}

// TestStoredSubscriptionsRevalidated: devices.json's subscriptions are
// checked again when it is read: one of a device that is not paired, or
// one that no longer passes validation (an http endpoint written by hand),
// is left out; the device makes it again from the page.
func TestStoredSubscriptionsRevalidated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "devices.json")
	s, err := store.OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := s.Add("a")
	b, _, _ := s.Add("b")
	for _, d := range []store.Device{a, b} {
		sub, err := webpush.DecodeSubscription([]byte(subBody("https://push.example/" + d.ID)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetPushSubscription(d.ID, sub); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	var f map[string]any
	json.Unmarshal(data, &f)
	pushes := f["push"].(map[string]any)
	pushes["d-not-paired"] = pushes[a.ID]
	pushes[b.ID].(map[string]any)["endpoint"] = "http://push.example/" + b.ID
	data, _ = json.Marshal(f)
	os.WriteFile(path, data, 0o600)
	again, err := store.OpenStore(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := endpoints(again); len(got) != 1 || got[a.ID] != "https://push.example/"+a.ID {
		t.Fatalf("read back: %v", got)
	}
	if err := again.SetPushSubscription("d-not-paired", again.PushTargets()[0].Sub); err == nil {
		t.Fatal("a subscription was stored for a device that is not paired")
	}
}
