// Package bearer is the one reader of a request's Authorization header
// (RFC 6750 section 2.1, RFC 9110 section 11.6.2): the agent API's access
// token, a paired device's credential on the device API and a durable
// agent's token on the token transport are all read here, so every
// surface accepts and refuses the same header the same way.
//
// A credential is accepted only as exactly one Authorization field whose
// value is the scheme "Bearer" (in any case, as the scheme is
// case-insensitive), one or more spaces, and a token of 1 to MaxToken
// bytes of visible ASCII with nothing after it. A bare token, another
// scheme, an empty token, a token with a space or a control character in
// it, and two Authorization fields are no credential at all.
package bearer

import (
	"net/http"
	"strings"
)

// MaxToken is the longest token read (a durable agent's token is at most
// 4096 bytes; Collie's own tokens are far shorter).
const MaxToken = 4096

// Token returns the bearer token of h's Authorization field, and false
// when there is none or it is not a well-formed bearer credential.
func Token(h http.Header) (string, bool) {
	vs := h.Values("Authorization")
	if len(vs) != 1 {
		return "", false
	}
	return Parse(vs[0])
}

// Parse reads one Authorization field value.
func Parse(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || len(tok) > MaxToken {
		return "", false
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return tok, true
}
