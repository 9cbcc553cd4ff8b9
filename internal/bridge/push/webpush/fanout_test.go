package webpush

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// TestRetryAfterBothForms: a push service's Retry-After is read as
// seconds or as an HTTP-date (in any of its three formats, against the
// provider's clock), and handed to the dispatcher as the wait; a date
// already past, or a value in neither form, names no wait.
func TestRetryAfterBothForms(t *testing.T) {
	now := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	at := now.Add(90 * time.Second)
	for _, tc := range []struct {
		name, value string
		want        time.Duration // 0: no wait named
	}{
		{"seconds", "120", 2 * time.Minute},
		{"imf_fixdate", at.Format(http.TimeFormat), 90 * time.Second},
		{"rfc850", at.Format("Monday, 02-Jan-06 15:04:05 GMT"), 90 * time.Second},
		{"asctime", at.Format(time.ANSIC), 90 * time.Second},
		{"past_date", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"cut_to_an_hour", "86400", time.Hour},
		{"neither", "in a while", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := pushtest.New(t, func() time.Time { return now })
			subs := &memSubs{m: map[string]Subscription{}}
			p, err := New(Options{StateDir: t.TempDir(), Subscriptions: subs, Client: svc.Client(), Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			r := &rig{p: p, subs: subs, svc: svc}
			sub := r.subscribe(t, "d-phone")
			svc.Replies(sub, pushtest.Reply{Status: http.StatusServiceUnavailable, RetryAfter: tc.value})
			_, err = p.SendReport(context.Background(), push.Message{Title: "q"})
			var ra *push.RetryAfterError
			named := errors.As(err, &ra)
			if err == nil || push.IsPermanent(err) || named != (tc.want != 0) || (named && ra.After != tc.want) {
				t.Fatalf("Retry-After %q: %v (%+v), want a wait of %v", tc.value, err, ra, tc.want)
			}
		})
	}
}

// TestSendToOneDestination: the dispatcher's way in (push.Fanout): one
// destination per subscribed device, named without its endpoint; SendTo
// pushes to that one subscription only, and says which failures are worth
// a retry there, and when the subscription has gone.
func TestSendToOneDestination(t *testing.T) {
	r := newRig(t)
	phone := r.subscribe(t, "d-phone")
	tablet := r.subscribe(t, "d-tablet")
	dests := r.p.Destinations()
	if len(dests) != 2 {
		t.Fatalf("destinations %v", dests)
	}
	for _, d := range dests {
		if strings.Contains(d.Name, d.Key) || !strings.HasPrefix(d.Name, "device d-") || !strings.Contains(d.Name, r.svc.Origin()) {
			t.Errorf("destination named %q", d.Name)
		}
	}
	m := push.Message{Title: "q", Key: "a\x00call\x00c1", Kind: push.KindQuestion}
	answer, err := r.p.SendTo(context.Background(), tablet.Endpoint, m)
	if err != nil || answer != "device d-tablet: "+r.svc.Origin()+" took it" {
		t.Fatalf("SendTo: %q, %v", answer, err)
	}
	if got := r.svc.Taken(); got[tablet.Endpoint] != 1 || got[phone.Endpoint] != 0 {
		t.Fatalf("taken %v: want the tablet's only", got)
	}
	for _, tc := range []struct {
		name      string
		reply     pushtest.Reply
		gone      bool
		permanent bool
	}{
		{"unavailable", pushtest.Reply{Status: http.StatusServiceUnavailable}, false, false},
		{"refused", pushtest.Reply{Status: http.StatusBadRequest}, false, true},
		{"ended", pushtest.Reply{Status: http.StatusGone}, true, false},
	} {
		r.svc.Replies(phone, tc.reply)
		_, err := r.p.SendTo(context.Background(), phone.Endpoint, m)
		if err == nil || errors.Is(err, push.ErrGone) != tc.gone || push.IsPermanent(err) != tc.permanent || strings.Contains(err.Error(), phone.Endpoint) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if r.subs.has("d-phone") {
		t.Fatal("a subscription its service ended was kept")
	}
	if _, err := r.p.SendTo(context.Background(), phone.Endpoint, m); !errors.Is(err, push.ErrGone) {
		t.Fatalf("SendTo a subscription no device holds: %v", err)
	}
	// A service that never answers: no answer in time, worth a retry.
	r.svc.Hang(tablet)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = r.p.SendTo(ctx, tablet.Endpoint, m)
	var e *Error
	if !errors.As(err, &e) || !e.Temporary() || push.IsPermanent(err) || !strings.Contains(err.Error(), "no answer in time") {
		t.Fatalf("SendTo a service that never answers: %v", err)
	}
}
