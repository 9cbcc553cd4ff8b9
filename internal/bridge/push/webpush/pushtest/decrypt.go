package pushtest

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Decrypt opens an aes128gcm push body (RFC 8188) as a browser does with
// its subscription's private key and auth secret (RFC 8291 §3.4), every
// record and its padding included. Tests use it on RFC 8291's Appendix A.
func Decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	return decrypt(body, priv, auth)
}

func decrypt(body []byte, priv *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen {
		return nil, fmt.Errorf("keyid is %d bytes, not a 65-byte P-256 key", idlen)
	}
	if rs < 18 {
		return nil, fmt.Errorf("record size %d is under 18", rs)
	}
	asPublicBytes, ct := body[21:21+idlen], body[21+idlen:]
	asPublic, err := ecdh.P256().NewPublicKey(asPublicBytes)
	if err != nil {
		return nil, fmt.Errorf("the keyid is not a P-256 point: %v", err)
	}
	secret, err := priv.ECDH(asPublic)
	if err != nil {
		return nil, err
	}
	uaPublic := priv.PublicKey().Bytes()
	// RFC 8291 §3.4, step by step as it is written there.
	prkKey := mac(auth, secret)
	keyInfo := append(append([]byte("WebPush: info\x00"), uaPublic...), asPublicBytes...)
	ikm := mac(prkKey, append(keyInfo, 1))
	prk := mac(salt, ikm)
	cek := mac(prk, []byte("Content-Encoding: aes128gcm\x00\x01"))[:16]
	nonce := mac(prk, []byte("Content-Encoding: nonce\x00\x01"))[:12]
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	var out []byte
	for seq := uint64(0); len(ct) > 0; seq++ {
		n := min(len(ct), int(rs))
		rec := ct[:n]
		ct = ct[n:]
		iv := append([]byte(nil), nonce...)
		for i := 0; i < 8; i++ {
			iv[11-i] ^= byte(seq >> (8 * i))
		}
		plain, err := gcm.Open(nil, iv, rec, nil)
		if err != nil {
			return nil, fmt.Errorf("record %d does not open: %v", seq, err)
		}
		end := len(plain) - 1
		for end >= 0 && plain[end] == 0 {
			end--
		}
		last := len(ct) == 0
		switch {
		case end < 0:
			return nil, fmt.Errorf("record %d has no padding delimiter", seq)
		case last && plain[end] != 2:
			return nil, fmt.Errorf("the last record's delimiter is %d, not 2", plain[end])
		case !last && plain[end] != 1:
			return nil, fmt.Errorf("record %d's delimiter is %d, not 1", seq, plain[end])
		}
		out = append(out, plain[:end]...)
	}
	return out, nil
}

func mac(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}
