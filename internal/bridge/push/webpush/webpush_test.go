package webpush

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// memSubs is a subscription store in memory.
type memSubs struct {
	mu      sync.Mutex
	m       map[string]Subscription // by device
	dropped []string
}

func (s *memSubs) PushTargets() []Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Target
	for d, sub := range s.m {
		out = append(out, Target{Device: d, Sub: sub})
	}
	return out
}

func (s *memSubs) DropPushSubscription(device, endpoint string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[device].Endpoint == endpoint {
		delete(s.m, device)
		s.dropped = append(s.dropped, device)
	}
	return nil
}

func (s *memSubs) has(device string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[device]
	return ok
}

// rig is a provider, its store and a push-service double.
type rig struct {
	p    *Provider
	subs *memSubs
	svc  *pushtest.Service
	dir  string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{subs: &memSubs{m: map[string]Subscription{}}, svc: pushtest.New(t, nil), dir: t.TempDir()}
	p, err := New(Options{StateDir: r.dir, Subscriptions: r.subs, Client: r.svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	return r
}

// subscribe makes a subscription at the double, bound to the provider's
// key, and stores it for device as the device API would: from the JSON
// the page posts, through DecodeSubscription.
func (r *rig) subscribe(t *testing.T, device string) *pushtest.Sub {
	t.Helper()
	sub := r.svc.Subscribe(t, r.p.PublicKey())
	s, err := DecodeSubscription(sub.JSON())
	if err != nil {
		t.Fatal(err)
	}
	r.subs.mu.Lock()
	r.subs.m[device] = s
	r.subs.mu.Unlock()
	return sub
}

func decodePayload(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("payload %q: %v", b, err)
	}
	return m
}

// TestSendThroughDouble_D4_D6: a question reaches every subscribed device
// through the double, which verifies the VAPID token (aud the service's
// origin, exp within 24 hours, sub a contact, signed with the key the
// subscription was made with) and decrypts the payload with the
// subscription's own keys. The payload is the Message and nothing more:
// the question's key does not leave the bridge (D4), and it holds no
// answer, only the URL a tap opens (D6).
func TestSendThroughDouble_D4_D6(t *testing.T) {
	r := newRig(t)
	r.subscribe(t, "d-phone")
	r.subscribe(t, "d-laptop")
	m := push.Message{Agent: "build", Conversation: "deploy", Title: "build · deploy: a question",
		Body: "", URL: "https://collie.example.ts.net/#q=build/c1/q1", Key: "build tool-call-7", Kind: push.KindQuestion}
	before := time.Now()
	if err := r.p.Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got := r.svc.Pushes()
	if len(got) != 2 {
		t.Fatalf("the double got %d pushes, want 2", len(got))
	}
	var tags []string
	for _, p := range got {
		if p.Problem != "" || p.Status != http.StatusCreated {
			t.Fatalf("the double refused a push (%d): %s", p.Status, p.Problem)
		}
		if p.Key != r.p.PublicKey() || p.Claims.Aud != r.svc.Origin() || p.Claims.Sub != DefaultSubject {
			t.Errorf("token: k %q aud %q sub %q", p.Key, p.Claims.Aud, p.Claims.Sub)
		}
		if exp := time.Unix(p.Claims.Exp, 0); exp.Before(before.Add(TokenLifetime-time.Minute)) || exp.After(time.Now().Add(24*time.Hour)) {
			t.Errorf("exp %v is not about %v away", exp, TokenLifetime)
		}
		if p.TTL != "14400" || p.Urgency != "high" {
			t.Errorf("TTL %q, Urgency %q", p.TTL, p.Urgency)
		}
		pl := decodePayload(t, p.Payload)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range pl {
				yield(k)
			}
		})
		if !slices.Equal(keys, []string{"body", "kind", "tag", "title", "url", "v"}) {
			t.Errorf("payload members %v", keys)
		}
		if pl["title"] != m.Title || pl["body"] != "" || pl["url"] != m.URL || pl["kind"] != "question" {
			t.Errorf("payload %s", p.Payload)
		}
		if strings.Contains(string(p.Payload), "tool-call-7") {
			t.Errorf("the question's key left the bridge: %s", p.Payload)
		}
		tags = append(tags, pl["tag"].(string))
	}
	if tags[0] != tags[1] || !strings.HasPrefix(tags[0], "collie-q-") {
		t.Errorf("tags %v: one question has one tag", tags)
	}
}

// TestPreviewOnlyFromBody_D4: the payload carries the Message's Body as
// the guard made it ([push] preview decides), cut to fit one push at a
// whole character; nothing is added.
func TestPreviewOnlyFromBody_D4(t *testing.T) {
	r := newRig(t)
	r.subscribe(t, "d-phone")
	long := strings.Repeat("é<", 3000) // escapes make JSON longer than the text
	for _, body := range []string{"", "Delete the build folder?", long} {
		if err := r.p.Send(context.Background(), push.Message{Title: "t", Body: body, Kind: push.KindQuestion}); err != nil {
			t.Fatal(err)
		}
		got := r.svc.Pushes()
		p := got[len(got)-1]
		if p.Problem != "" {
			t.Fatal(p.Problem)
		}
		pl := decodePayload(t, p.Payload)
		b := pl["body"].(string)
		switch {
		case body != long && b != body:
			t.Errorf("body %q became %q", body, b)
		case body == long && (!strings.HasSuffix(b, "…") || !strings.HasPrefix(long, strings.TrimSuffix(b, "…")) || !utf8.ValidString(b) || len(p.Payload) > MaxPlaintext):
			t.Errorf("a long body was cut to %d bytes: %q…", len(b), b[:40])
		}
	}
}

// TestGoneDropsSubscription: a push service answering 404 or 410 (RFC
// 8030 §7.3) has ended the subscription; the provider forgets it, keeps
// the others, and the push counts as done.
func TestGoneDropsSubscription(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusGone} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			r := newRig(t)
			gone := r.subscribe(t, "d-gone")
			r.subscribe(t, "d-live")
			r.svc.Answer(gone, status)
			if err := r.p.Send(context.Background(), push.Message{Title: "q"}); err != nil {
				t.Fatalf("Send: %v", err)
			}
			if r.subs.has("d-gone") || !r.subs.has("d-live") || len(r.svc.Pushes()) != 2 {
				t.Fatalf("after %d: dropped %v, pushes %d", status, r.subs.dropped, len(r.svc.Pushes()))
			}
			// The next push goes only to the subscription left.
			r.p.Send(context.Background(), push.Message{Title: "q2"})
			if n := len(r.svc.Pushes()); n != 3 {
				t.Fatalf("%d pushes after the drop, want 3", n)
			}
		})
	}
}

// TestRefusedIsAnError: 429 and 5xx are errors the dispatcher may retry
// (Temporary, Retry-After kept); other refusals are errors that are not;
// none drops the subscription, and no error carries the endpoint, which
// is a capability.
func TestRefusedIsAnError(t *testing.T) {
	for _, c := range []struct {
		status    int
		temporary bool
	}{
		{http.StatusTooManyRequests, true}, {http.StatusInternalServerError, true}, {http.StatusServiceUnavailable, true},
		{http.StatusBadRequest, false}, {http.StatusForbidden, false}, {http.StatusRequestEntityTooLarge, false},
		{http.StatusTemporaryRedirect, false},
	} {
		t.Run(http.StatusText(c.status), func(t *testing.T) {
			r := newRig(t)
			sub := r.subscribe(t, "d-phone")
			r.svc.Answer(sub, c.status)
			err := r.p.Send(context.Background(), push.Message{Title: "q"})
			var e *Error
			if !errors.As(err, &e) || e.Status != c.status || e.Temporary() != c.temporary {
				t.Fatalf("Send: %v (%#v), want status %d temporary %v", err, e, c.status, c.temporary)
			}
			// The dispatcher's contract (internal/bridge/push): permanent, or to
			// retry after the wait a service named.
			if push.IsPermanent(err) == c.temporary {
				t.Errorf("push.IsPermanent = %v for %d", push.IsPermanent(err), c.status)
			}
			var ra *push.RetryAfterError
			if c.status == http.StatusTooManyRequests && (e.RetryAfter != 30*time.Second || !errors.As(err, &ra) || ra.After != 30*time.Second) {
				t.Errorf("Retry-After: %v, %v", e.RetryAfter, ra)
			}
			if strings.Contains(err.Error(), sub.Endpoint) || !r.subs.has("d-phone") {
				t.Errorf("error %q names the endpoint, or the subscription was dropped", err)
			}
		})
	}
	// No answer at all is temporary too.
	r := newRig(t)
	r.subscribe(t, "d-phone")
	r.p.client.Timeout = time.Nanosecond
	var e *Error
	if err := r.p.Send(context.Background(), push.Message{Title: "q"}); !errors.As(err, &e) || !e.Temporary() || e.Status != 0 {
		t.Fatalf("Send with no answer: %v", err)
	}
}

// TestNoRedirect: a push service's redirect is not followed: the push is
// not sent on to another host.
func TestNoRedirect(t *testing.T) {
	r := newRig(t)
	sub := r.svc.Subscribe(t, r.p.PublicKey())
	redirect := httptest.NewTLSServer(http.RedirectHandler(sub.Endpoint, http.StatusTemporaryRedirect))
	defer redirect.Close()
	r.p.client.Transport = redirect.Client().Transport
	s, err := DecodeSubscription(sub.JSON())
	if err != nil {
		t.Fatal(err)
	}
	s.Endpoint = redirect.URL + "/push/x"
	r.subs.m["d-phone"] = s
	err = r.p.Send(context.Background(), push.Message{Title: "q"})
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect || len(r.svc.Pushes()) != 0 {
		t.Fatalf("Send: %v; the double got %d pushes", err, len(r.svc.Pushes()))
	}
}

// TestTestPushWithoutDevices: with no subscription a push is nothing to
// do, not a failure (Web Push is on wherever the device API is), and
// `collie push test` says what would send one.
func TestTestPushWithoutDevices(t *testing.T) {
	r := newRig(t)
	for _, k := range []push.Kind{push.KindTest, push.KindQuestion, push.KindSummary} {
		if answer, err := r.p.SendReport(context.Background(), push.Message{Kind: k}); err != nil || answer != NoSubscriptions {
			t.Fatalf("kind %d: %q, %v", k, answer, err)
		}
	}
}

// TestDoubleChecksTheToken: the double refuses what a push service
// refuses, so the tests above prove something: a token more than 24 hours
// away or expired, for another audience, or signed with a key other than
// the subscription's.
func TestDoubleChecksTheToken(t *testing.T) {
	r := newRig(t)
	sub := r.subscribe(t, "d-phone")
	for _, c := range []struct {
		name string
		skew time.Duration
		aud  string
	}{
		{"exp_over_24h", 12*time.Hour + time.Minute, ""},
		{"expired", -12*time.Hour - time.Minute, ""},
		{"wrong_aud", 0, "https://push.example"},
	} {
		t.Run(c.name, func(t *testing.T) {
			aud := r.svc.Origin()
			if c.aud != "" {
				aud = c.aud
			}
			authz, err := r.p.keys.authorization(aud, DefaultSubject, time.Now().Add(c.skew))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, sub.Endpoint, strings.NewReader("x"))
			req.Header.Set("Authorization", authz)
			req.Header.Set("TTL", "60")
			req.Header.Set("Content-Encoding", "aes128gcm")
			resp, err := r.svc.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the double answered %d", resp.StatusCode)
			}
		})
	}
	t.Run("other_key", func(t *testing.T) {
		other, err := New(Options{StateDir: t.TempDir(), Subscriptions: r.subs, Client: r.svc.Client()})
		if err != nil {
			t.Fatal(err)
		}
		err = other.Send(context.Background(), push.Message{Title: "q"})
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusForbidden {
			t.Fatalf("a push signed with another key: %v", err)
		}
	})
}

// TestVAPIDKeyPersists: the key is made at first start, mode 0600, and the
// same key comes back after a restart, so subscriptions survive it; a key
// file others can read is tightened; a damaged one is an error that says
// what to do, and is not replaced.
func TestVAPIDKeyPersists(t *testing.T) {
	r := newRig(t)
	path := filepath.Join(r.dir, KeyFile)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	r.subscribe(t, "d-phone")
	again, err := New(Options{StateDir: r.dir, Subscriptions: r.subs, Client: r.svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if again.PublicKey() != r.p.PublicKey() {
		t.Fatal("a restart made a new key")
	}
	if err := again.Send(context.Background(), push.Message{Title: "q"}); err != nil {
		t.Fatalf("a subscription made before the restart: %v", err)
	}
	os.Chmod(path, 0o644)
	if k, err := LoadKeys(r.dir, nil); err != nil || k.PublicKey() != r.p.PublicKey() {
		t.Fatalf("LoadKeys of a 0644 file: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v after loading", fi.Mode().Perm())
	}
	damaged := []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	os.WriteFile(path, damaged, 0o600)
	if _, err := LoadKeys(r.dir, nil); err == nil || !strings.Contains(err.Error(), "move it away") {
		t.Fatalf("a damaged key: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(damaged) {
		t.Fatal("a damaged key was replaced")
	}
}

// TestReportAndMixedOutcomes: the answer `collie push test` shows counts
// the services that took the push and the subscriptions forgotten; one
// service failing for now makes the whole push one to retry, while the
// ended subscription beside it is forgotten all the same.
func TestReportAndMixedOutcomes(t *testing.T) {
	r := newRig(t)
	r.subscribe(t, "d-a")
	gone := r.subscribe(t, "d-b")
	r.svc.Answer(gone, http.StatusGone)
	answer, err := r.p.SendReport(context.Background(), push.Message{Title: "q", Kind: push.KindTest})
	if err != nil || answer != "1 of 2 subscribed devices' push services took it; 1 subscriptions had ended and were forgotten" {
		t.Fatalf("SendReport: %q, %v", answer, err)
	}
	failing := r.subscribe(t, "d-c")
	r.svc.Answer(failing, http.StatusBadGateway)
	gone2 := r.subscribe(t, "d-d")
	r.svc.Answer(gone2, http.StatusNotFound)
	_, err = r.p.SendReport(context.Background(), push.Message{Title: "q"})
	var e *Error
	if err == nil || push.IsPermanent(err) || !errors.As(err, &e) || e.Device != "d-c" {
		t.Fatalf("one service failing for now: %v", err)
	}
	if r.subs.has("d-d") || !r.subs.has("d-a") || !r.subs.has("d-c") {
		t.Fatalf("after the mixed push: dropped %v", r.subs.dropped)
	}
}

// TestSubscriptionsSetLater: the provider is made before the device store
// opens (the dispatcher holds it); until SetSubscriptions it pushes to
// nobody, and then to the store's subscriptions.
func TestSubscriptionsSetLater(t *testing.T) {
	svc := pushtest.New(t, nil)
	p, err := New(Options{StateDir: t.TempDir(), Client: svc.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Send(context.Background(), push.Message{Title: "q"}); err != nil {
		t.Fatalf("a question before the store: %v", err)
	}
	subs := &memSubs{m: map[string]Subscription{}}
	s, _ := DecodeSubscription(svc.Subscribe(t, p.PublicKey()).JSON())
	subs.m["d-phone"] = s
	p.SetSubscriptions(subs)
	if err := p.Send(context.Background(), push.Message{Title: "q"}); err != nil || len(svc.Pushes()) != 1 {
		t.Fatalf("after SetSubscriptions: %v, %d pushes", err, len(svc.Pushes()))
	}
}

// TestTokenReused: a push service gets the same signed token for a while
// (Apple asks for a new one at most once an hour), a new one before the
// old expires, and another service its own.
func TestTokenReused(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	p, err := New(Options{StateDir: t.TempDir(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := p.authorization("https://push.example")
	now = now.Add(time.Hour)
	a2, _ := p.authorization("https://push.example")
	b, _ := p.authorization("https://other.example")
	if a1 != a2 || a1 == b {
		t.Fatal("a token was not reused within the hour, or two services share one")
	}
	now = now.Add(tokenReuse)
	if a3, _ := p.authorization("https://push.example"); a3 == a1 {
		t.Fatalf("a token was used past %v", tokenReuse)
	}
	if tokenReuse < time.Hour || TokenLifetime-tokenReuse < time.Hour || TokenLifetime > 24*time.Hour {
		t.Fatalf("token lifetime %v, reuse %v", TokenLifetime, tokenReuse)
	}
}

// TestSubjectIsTheContact: the VAPID token names the contact the bridge
// was given ([push] contact), not the project's page.
func TestSubjectIsTheContact(t *testing.T) {
	r := newRig(t)
	p, err := New(Options{StateDir: r.dir, Subscriptions: r.subs, Client: r.svc.Client(), Subject: "mailto:ops@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	r.subscribe(t, "d-phone")
	if err := r.p.Send(context.Background(), push.Message{Title: "q"}); err != nil {
		t.Fatal(err)
	}
	got := r.svc.Pushes()
	if len(got) != 1 || got[0].Claims.Sub != "mailto:ops@example.org" {
		t.Fatalf("pushes %+v, want one with sub mailto:ops@example.org", got)
	}
}
