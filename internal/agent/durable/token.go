package durable

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/collie-linux/collie/internal/protocol/bearer"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Tokens are the bearer tokens an agent on the token transport accepts: the
// current one and, during a rotation, the next (K6).
type Tokens struct {
	Current string // COLLIE_TOKEN
	Next    string // COLLIE_TOKEN_NEXT, accepted only while set
}

// RequireToken refuses every request without an accepted bearer token with
// 401 and the code token-refused (K3, K7). Tokens are compared in constant
// time, over their hashes so that the length leaks nothing either.
func RequireToken(t Tokens, next http.Handler) http.Handler {
	want := [][32]byte{sha256.Sum256([]byte(t.Current))}
	if t.Next != "" {
		want = append(want, sha256.Sum256([]byte(t.Next)))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer.Token(r.Header)
		match := 0
		if ok && got != "" && t.Current != "" {
			sum := sha256.Sum256([]byte(got))
			for _, h := range want {
				match |= subtle.ConstantTimeCompare(sum[:], h[:])
			}
		}
		if match != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="collie"`)
			writeError(w, http.StatusUnauthorized, wire.CodeTokenRefused, "the token was refused; give the agent's current token")
			return
		}
		next.ServeHTTP(w, r)
	})
}
