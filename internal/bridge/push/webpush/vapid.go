package webpush

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
)

// KeyFile is the VAPID key pair's file in the state folder: the private
// key as PKCS #8 PEM, mode 0600. It is made at first start and kept, since
// every browser subscription is bound to its public key (RFC 8292 §4).
const KeyFile = "webpush-vapid.pem"

// TokenLifetime is how long a VAPID token the bridge signs is valid. RFC
// 8292 §2 allows at most 24 hours; push services refuse more.
const TokenLifetime = 12 * time.Hour

// Keys is the bridge's VAPID key pair (RFC 8292): it signs every push, and
// its public key is the applicationServerKey a page subscribes with.
type Keys struct {
	priv *ecdsa.PrivateKey
	pub  string // base64url, uncompressed point
}

// LoadKeys reads the VAPID key pair from KeyFile in stateDir, or makes
// one there (0600, written whole) when there is none. A key file that
// group or others can read is tightened to 0600 with one log line; a
// damaged one is an error that says what to do, never replaced silently:
// a new key would silently end every device's subscription.
func LoadKeys(stateDir string, log *slog.Logger) (*Keys, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path := filepath.Join(stateDir, KeyFile)
	atomicfile.RemoveStale(path) // a save killed midway leaves a temp file holding the key
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return makeKeys(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read the Web Push key: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(path, 0o600); err != nil {
			return nil, fmt.Errorf("the Web Push key %s has mode %#o and could not be made 0600: %w", path, fi.Mode().Perm(), err)
		}
		log.Warn("tightened the Web Push key file to mode 0600", "path", path, "was", strconv.FormatUint(uint64(fi.Mode().Perm()), 8))
	}
	k, err := parseKey(data)
	if err != nil {
		return nil, fmt.Errorf("the Web Push key %s is damaged (%v); move it away and restart collie to make a new one, then turn notifications on again on each device", path, err)
	}
	return k, nil
}

func makeKeys(path string) (*Keys, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the Web Push key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode the Web Push key: %w", err)
	}
	if err := atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return nil, fmt.Errorf("save the Web Push key: %w", err)
	}
	return newKeys(priv)
}

func parseKey(data []byte) (*Keys, error) {
	block, rest := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" || len(rest) != 0 {
		return nil, errors.New("not one PEM block of type PRIVATE KEY")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, errors.New("not a P-256 key")
	}
	return newKeys(priv)
}

func newKeys(priv *ecdsa.PrivateKey) (*Keys, error) {
	pub, err := priv.PublicKey.ECDH()
	if err != nil {
		return nil, err
	}
	return &Keys{priv: priv, pub: base64.RawURLEncoding.EncodeToString(pub.Bytes())}, nil
}

// PublicKey is the applicationServerKey a page subscribes with (RFC 8292
// §3.2): the uncompressed P-256 point, base64url without padding.
func (k *Keys) PublicKey() string { return k.pub }

// authorization is the Authorization header of a push to a service at
// origin (RFC 8292 §3): a JWT signed with ES256 naming the push service
// (aud), an expiry at most a day away (exp) and a contact (sub), and the
// public key it verifies with.
func (k *Keys) authorization(origin, subject string, now time.Time) (string, error) {
	enc := base64.RawURLEncoding
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{origin, now.Add(TokenLifetime).Unix(), subject})
	if err != nil {
		return "", err
	}
	signed := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign the VAPID token: %w", err)
	}
	// JWS ES256 is r and s as 32 bytes each (RFC 7518 §3.4), not ASN.1.
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return "vapid t=" + signed + "." + enc.EncodeToString(sig) + ", k=" + k.pub, nil
}

// ecdhPublic decodes a subscription's p256dh key.
func ecdhPublic(b []byte) (*ecdh.PublicKey, error) { return ecdh.P256().NewPublicKey(b) }
