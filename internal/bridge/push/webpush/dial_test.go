package webpush

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/push"
	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// TestPublicAddressesOnly: the addresses the provider's own client may
// connect to: the public internet, not this machine, its networks, or the
// ranges that are not routed there.
func TestPublicAddressesOnly(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
	}{
		{"142.250.74.42", true}, {"2a00:1450:4001:82a::200a", true}, {"17.188.143.194", true}, {"::ffff:142.250.74.42", true},
		{"127.0.0.1", false}, {"127.8.9.10", false}, {"::1", false}, {"::ffff:127.0.0.1", false},
		{"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.10", false}, {"fd00::1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"100.64.0.1", false}, {"100.101.102.103", false},
		{"0.0.0.0", false}, {"0.1.2.3", false}, {"::", false}, {"224.0.0.1", false}, {"ff02::1", false},
		{"198.18.0.1", false}, {"192.0.2.1", false}, {"203.0.113.9", false}, {"240.0.0.1", false},
		{"255.255.255.255", false}, {"2001:db8::1", false},
	} {
		if got := isPublic(netip.MustParseAddr(c.addr)); got != c.public {
			t.Errorf("isPublic(%s) = %v, want %v", c.addr, got, c.public)
		}
	}
}

// TestDefaultClientRefusesLocalEndpoints: a subscription whose endpoint
// leads to this machine (here the double, on loopback) is refused by the
// provider's own client before anything is sent, as a failure no retry
// fixes; the subscription is kept (the device may fix it).
func TestDefaultClientRefusesLocalEndpoints(t *testing.T) {
	svc := pushtest.New(t, nil)
	subs := &memSubs{m: map[string]Subscription{}}
	p, err := New(Options{StateDir: t.TempDir(), Subscriptions: subs})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := DecodeSubscription(svc.Subscribe(t, p.PublicKey()).JSON())
	subs.m["d-phone"] = s
	err = p.Send(context.Background(), push.Message{Title: "q"})
	var e *Error
	if !errors.Is(err, errNotPublic) || !push.IsPermanent(err) || !errors.As(err, &e) || e.Temporary() {
		t.Fatalf("Send to a loopback endpoint: %v", err)
	}
	if len(svc.Pushes()) != 0 || !subs.has("d-phone") {
		t.Fatalf("the double got %d pushes; subscription kept: %v", len(svc.Pushes()), subs.has("d-phone"))
	}
}
