package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// recordSize is the rs of the one record a push carries (RFC 8188 §2):
// 4096, the size RFC 8291 §4 says every push service must take.
const recordSize = 4096

// headerSize is the aes128gcm header: salt (16), rs (4), idlen (1) and the
// application server's public key as keyid (65).
const headerSize = 16 + 4 + 1 + 65

// MaxPlaintext is the largest payload one push carries: a 4096-byte
// record less the header, the padding delimiter and the AEAD tag.
const MaxPlaintext = recordSize - headerSize - 1 - 16

// encrypt seals plaintext for a user agent whose public key is uaPublic
// (65 bytes, uncompressed P-256) and whose auth secret is auth (16 bytes),
// as RFC 8291 §3.4 says, in one aes128gcm record (RFC 8188) with no
// padding. salt and asKey are fresh for every push; tests give RFC 8291
// Appendix A's.
func encrypt(plaintext []byte, uaPublic *ecdh.PublicKey, auth []byte, salt []byte, asKey *ecdh.PrivateKey) ([]byte, error) {
	if len(plaintext) > MaxPlaintext {
		return nil, fmt.Errorf("the push payload is %d bytes, more than the %d one push carries", len(plaintext), MaxPlaintext)
	}
	if len(auth) != authSize || len(salt) != 16 {
		return nil, errors.New("webpush: auth secret or salt of the wrong size")
	}
	ecdhSecret, err := asKey.ECDH(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("ECDH with the subscription's key: %w", err)
	}
	asPublic := asKey.PublicKey().Bytes()
	// RFC 8291 §3.3: the IKM mixes the auth secret and both public keys in.
	keyInfo := append(append([]byte("WebPush: info\x00"), uaPublic.Bytes()...), asPublic...)
	prkKey := hmacSHA256(auth, ecdhSecret)
	ikm, err := hkdf.Expand(sha256.New, prkKey, string(keyInfo), 32)
	if err != nil {
		return nil, err
	}
	// RFC 8188 §2.2–2.3: the content-encryption key and the nonce.
	prk := hmacSHA256(salt, ikm)
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, headerSize+len(plaintext)+1+gcm.Overhead())
	out = append(out, salt...)
	out = binary.BigEndian.AppendUint32(out, recordSize)
	out = append(out, byte(len(asPublic)))
	out = append(out, asPublic...)
	// The one record is the last: its padding delimiter is 2 (RFC 8188 §2).
	record := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), 2)
	return gcm.Seal(out, nonce, record, nil), nil
}

// seal is encrypt with a fresh salt and application-server key pair.
func seal(plaintext []byte, uaPublic *ecdh.PublicKey, auth []byte) ([]byte, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return nil, fmt.Errorf("read random bytes: %w", err)
	}
	asKey, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make a key pair for the push: %w", err)
	}
	return encrypt(plaintext, uaPublic, auth, salt, asKey)
}

// hmacSHA256 is HKDF-Extract(salt, ikm) (RFC 5869 §2.2).
func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}
