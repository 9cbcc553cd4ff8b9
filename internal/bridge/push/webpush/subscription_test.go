package webpush

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
)

const (
	goodP256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	goodAuth   = "BTBZMqHH6r4Tts7J_aSIgg"
)

func subJSON(endpoint, p256dh, auth string) string {
	b, _ := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": p256dh, "auth": auth}})
	return string(b)
}

// TestDecodeSubscription: what a page may post as its subscription. The
// endpoint is where the bridge will send requests, so it is held to an
// https URL of a plain host, with nothing to hide a user name, another
// host or a control character in; the keys must be the sizes RFC 8291
// uses and the public key a point on P-256.
func TestDecodeSubscription(t *testing.T) {
	ok := []struct{ name, body string }{
		{"fcm", subJSON("https://fcm.googleapis.com/fcm/send/cXy:APA91bE", goodP256dh, goodAuth)},
		{"mozilla", subJSON("https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk", goodP256dh, goodAuth)},
		{"apple", subJSON("https://web.push.apple.com/QGxW2n", goodP256dh, goodAuth)},
		{"windows_query", subJSON("https://wns2-by3p.notify.windows.com/w/?token=BQYAAA%2b", goodP256dh, goodAuth)},
		{"port_and_ip", subJSON("https://127.0.0.1:8443/push/x", goodP256dh, goodAuth)},
		{"ipv6", subJSON("https://[::1]:8443/push/x", goodP256dh, goodAuth)},
		{"expiration", `{"endpoint":"https://push.example/x","expirationTime":1767225600000,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"}}`},
		{"longest", subJSON("https://push.example/"+strings.Repeat("a", MaxEndpoint-len("https://push.example/")), goodP256dh, goodAuth)},
	}
	for _, c := range ok {
		t.Run("ok_"+c.name, func(t *testing.T) {
			if _, err := DecodeSubscription([]byte(c.body)); err != nil {
				t.Fatal(err)
			}
		})
	}
	offCurve := "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw5"
	bad := []struct{ name, body string }{
		{"http", subJSON("http://push.example/x", goodP256dh, goodAuth)},
		{"scheme_case", subJSON("HTTPS://push.example/x", goodP256dh, goodAuth)},
		{"other_scheme", subJSON("wss://push.example/x", goodP256dh, goodAuth)},
		{"userinfo", subJSON("https://user:pw@push.example/x", goodP256dh, goodAuth)},
		{"user_only", subJSON("https://user@push.example/x", goodP256dh, goodAuth)},
		{"fragment", subJSON("https://push.example/x#frag", goodP256dh, goodAuth)},
		{"no_path", subJSON("https://push.example", goodP256dh, goodAuth)},
		{"no_host", subJSON("https:///x", goodP256dh, goodAuth)},
		{"backslash", subJSON(`https://push.example\@evil.example/x`, goodP256dh, goodAuth)},
		{"space", subJSON("https://push.example/a b", goodP256dh, goodAuth)},
		{"control", subJSON("https://push.example/a\x01", goodP256dh, goodAuth)},
		{"non_ascii", subJSON("https://püsh.example/x", goodP256dh, goodAuth)},
		{"rtl_override", subJSON("https://push.example/\u202ex", goodP256dh, goodAuth)},
		{"ipv6_zone", subJSON("https://[fe80::1%25eth0]/x", goodP256dh, goodAuth)},
		{"port_zero", subJSON("https://push.example:0/x", goodP256dh, goodAuth)},
		{"port_big", subJSON("https://push.example:65536/x", goodP256dh, goodAuth)},
		{"port_empty", subJSON("https://push.example:/x", goodP256dh, goodAuth)},
		{"port_letters", subJSON("https://push.example:ab/x", goodP256dh, goodAuth)},
		{"host_underscore", subJSON("https://push_x.example/x", goodP256dh, goodAuth)},
		{"host_label_dash", subJSON("https://-push.example/x", goodP256dh, goodAuth)},
		{"host_empty_label", subJSON("https://push..example/x", goodP256dh, goodAuth)},
		{"too_long", subJSON("https://push.example/"+strings.Repeat("a", MaxEndpoint), goodP256dh, goodAuth)},
		{"empty_endpoint", subJSON("", goodP256dh, goodAuth)},
		{"p256dh_short", subJSON("https://push.example/x", goodP256dh[:86], goodAuth)},
		{"p256dh_padded", subJSON("https://push.example/x", goodP256dh+"=", goodAuth)},
		{"p256dh_std_base64", subJSON("https://push.example/x", strings.ReplaceAll(strings.ReplaceAll(goodP256dh, "-", "+"), "_", "/"), goodAuth)},
		{"p256dh_off_curve", subJSON("https://push.example/x", offCurve, goodAuth)},
		{"p256dh_compressed", subJSON("https://push.example/x", "AyVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcx", goodAuth)},
		{"auth_short", subJSON("https://push.example/x", goodP256dh, "BTBZMqHH6r4Tts7J_aSI")},
		{"auth_long", subJSON("https://push.example/x", goodP256dh, goodAuth+"AA")},
		{"auth_stray_bits", subJSON("https://push.example/x", goodP256dh, "BTBZMqHH6r4Tts7J_aSIgh")},
		{"negative_expiration", `{"endpoint":"https://push.example/x","expirationTime":-1,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"}}`},
		{"fractional_expiration", `{"endpoint":"https://push.example/x","expirationTime":1.5,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"}}`},
		{"unknown_member", `{"endpoint":"https://push.example/x","expirationTime":null,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"},"extra":1}`},
		{"unknown_key", `{"endpoint":"https://push.example/x","expirationTime":null,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `","x":"y"}}`},
		{"member_case", `{"Endpoint":"https://push.example/x","expirationTime":null,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"}}`},
		{"duplicate", `{"endpoint":"https://push.example/x","endpoint":"https://evil.example/x","expirationTime":null,"keys":{"p256dh":"` + goodP256dh + `","auth":"` + goodAuth + `"}}`},
		{"trailing", subJSON("https://push.example/x", goodP256dh, goodAuth) + "{}"},
		{"not_json", "endpoint=https://push.example/x"},
		{"empty", ""},
		{"huge", subJSON("https://push.example/x", goodP256dh, goodAuth) + strings.Repeat(" ", MaxSubscriptionJSON)},
	}
	for _, c := range bad {
		t.Run("bad_"+c.name, func(t *testing.T) {
			_, err := DecodeSubscription([]byte(c.body))
			if !errors.Is(err, ErrSubscription) {
				t.Fatalf("accepted, or not an ErrSubscription: %v", err)
			}
			checkMessage(t, err)
		})
	}
}

// checkMessage: an error is one printable ASCII sentence that never quotes
// a key (a subscription's keys are secrets of the device).
func checkMessage(t testing.TB, err error) {
	t.Helper()
	msg := err.Error()
	for i := 0; i < len(msg); i++ {
		if msg[i] < 0x20 || msg[i] > 0x7e {
			t.Fatalf("message %q has byte %#x", msg, msg[i])
		}
	}
	if strings.Contains(msg, goodAuth) || strings.Contains(msg, goodP256dh[:40]) {
		t.Fatalf("message %q quotes a key", msg)
	}
}

// FuzzDecodeSubscription: whatever DecodeSubscription takes is a
// subscription the provider can send to (an https URL with a host, no
// user name, no fragment, within the cap; keys of the right sizes on the
// curve), reads back the same after encoding; every refusal is an
// ErrSubscription with a printable ASCII message.
func FuzzDecodeSubscription(f *testing.F) {
	f.Add([]byte(subJSON("https://fcm.googleapis.com/fcm/send/x", goodP256dh, goodAuth)))
	f.Add([]byte(subJSON("https://a:b@push.example/x", goodP256dh, goodAuth)))
	f.Add([]byte(subJSON("https://[::1]:1/x?y", goodP256dh, goodAuth)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSubscription(data)
		if err != nil {
			if !errors.Is(err, ErrSubscription) {
				t.Fatalf("%q: %v is not an ErrSubscription", data, err)
			}
			for _, c := range []byte(err.Error()) {
				if c < 0x20 || c > 0x7e {
					t.Fatalf("%q: message %q has byte %#x", data, err, c)
				}
			}
			return
		}
		u, err := url.Parse(s.Endpoint)
		switch {
		case err != nil, u.Scheme != "https", u.Host == "", u.User != nil, u.Fragment != "", strings.Contains(s.Endpoint, "#"),
			len(s.Endpoint) > MaxEndpoint, !strings.HasPrefix(s.Endpoint, "https://"+u.Host+"/"):
			t.Fatalf("%q: took the endpoint %q (%v)", data, s.Endpoint, err)
		}
		if !strings.HasPrefix(s.Origin(), "https://") || strings.ContainsAny(s.Origin()[len("https://"):], "/@?#") {
			t.Fatalf("%q: origin %q", data, s.Origin())
		}
		pub, err1 := s.publicKey()
		auth, err2 := s.auth()
		if err1 != nil || err2 != nil || len(pub) != 65 || len(auth) != 16 {
			t.Fatalf("%q: keys %v %v", data, err1, err2)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := DecodeSubscription(again)
		if err != nil || s2.Endpoint != s.Endpoint || s2.Keys != s.Keys {
			t.Fatalf("%q: encoded as %s, read back as %+v, %v", data, again, s2, err)
		}
	})
}
