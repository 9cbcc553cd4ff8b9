// Package policy is the device API's HTTP policy: what a request must be
// before any route serves it, decided from the request alone. The Site is
// the listener's own addresses (the Host check that stops DNS rebinding)
// and its page's origins (the origin check of the write gate); TrustProxy
// and Front read a reverse proxy's forwarded headers, and only from this
// machine's loopback; Source names where a request came from, and a
// Limiter is a token bucket per source or device, bounded in memory.
//
// It says yes or no and never writes a reply: the router and the write
// gate in internal/bridge/device word each refusal from
// internal/bridge/device/apierr's table. It imports the standard library
// only: no device store, no handler, no protocol.
package policy
