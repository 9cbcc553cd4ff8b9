package webpush

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"testing"

	"github.com/collie-linux/collie/internal/bridge/push/webpush/pushtest"
)

// RFC 8291 Appendix A: every input and the resulting push body.
var rfc8291 = struct {
	plaintext, asPrivate, uaPrivate, uaPublic, auth, salt, body string
}{
	plaintext: "When I grow up, I want to be a watermelon",
	asPrivate: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
	uaPrivate: "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94",
	uaPublic:  "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
	auth:      "BTBZMqHH6r4Tts7J_aSIgg",
	salt:      "DGv6ra1nlYgDCS1FRnbzlw",
	body: "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml" +
		"mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT" +
		"pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
}

func unb64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEncryptRFC8291AppendixA: the encryption gives RFC 8291's example
// byte for byte, and the push-service double's decryption opens it: each
// of the two is checked against the RFC, not only against the other.
func TestEncryptRFC8291AppendixA(t *testing.T) {
	v := rfc8291
	asKey, err := ecdh.P256().NewPrivateKey(unb64(t, v.asPrivate))
	if err != nil {
		t.Fatal(err)
	}
	uaKey, err := ecdh.P256().NewPrivateKey(unb64(t, v.uaPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(uaKey.PublicKey().Bytes(), unb64(t, v.uaPublic)) {
		t.Fatal("the RFC's user agent keys do not match")
	}
	got, err := encrypt([]byte(v.plaintext), uaKey.PublicKey(), unb64(t, v.auth), unb64(t, v.salt), asKey)
	if err != nil {
		t.Fatal(err)
	}
	if want := unb64(t, v.body); !bytes.Equal(got, want) {
		t.Fatalf("encrypt gave\n%s\nRFC 8291 Appendix A has\n%s", base64.RawURLEncoding.EncodeToString(got), v.body)
	}
	plain, err := pushtest.Decrypt(unb64(t, v.body), uaKey, unb64(t, v.auth))
	if err != nil || string(plain) != v.plaintext {
		t.Fatalf("the double opens the RFC's body as %q, %v", plain, err)
	}
	// A body changed anywhere does not open.
	bad := unb64(t, v.body)
	bad[len(bad)-1] ^= 1
	if _, err := pushtest.Decrypt(bad, uaKey, unb64(t, v.auth)); err == nil {
		t.Fatal("the double opened a changed body")
	}
}

// TestSealFreshEachTime: every push has its own salt and key pair, and the
// largest payload fits the 4096 bytes every push service takes.
func TestSealFreshEachTime(t *testing.T) {
	ua, _ := ecdh.P256().GenerateKey(nil)
	auth := make([]byte, 16)
	a, err := seal([]byte("x"), ua.PublicKey(), auth)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := seal([]byte("x"), ua.PublicKey(), auth)
	if bytes.Equal(a[:16], b[:16]) || bytes.Equal(a[21:86], b[21:86]) {
		t.Fatal("two pushes share a salt or a key pair")
	}
	full, err := seal(bytes.Repeat([]byte("y"), MaxPlaintext), ua.PublicKey(), auth)
	if err != nil || len(full) != pushtest.MaxBody {
		t.Fatalf("the largest payload sealed to %d bytes (%v), want %d", len(full), err, pushtest.MaxBody)
	}
	if plain, err := pushtest.Decrypt(full, ua, auth); err != nil || len(plain) != MaxPlaintext {
		t.Fatalf("the largest payload opened to %d bytes, %v", len(plain), err)
	}
	if _, err := seal(make([]byte, MaxPlaintext+1), ua.PublicKey(), auth); err == nil {
		t.Fatal("sealed a payload larger than one push")
	}
}
