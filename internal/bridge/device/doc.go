// Package device is how a human's phone or browser reaches the bridge:
// pairing, device credentials, the write gate, and the device API.
//
// A device pairs by redeeming a single-use secret that `collie pair` made
// (at most 10 minutes old). It receives a random 256-bit credential; the
// bridge keeps only its SHA-256 hash, in devices.json (0600) in the state
// folder. Revoking a device cuts it off at once, live connections included.
//
// The package is the router and the handlers: pairing, the reads and the
// change feed, the writes behind the write gate, Web Push subscriptions.
// What a request must be to be served (its host, origin, forwarded
// headers and rate) is internal/bridge/device/policy; the devices,
// their credentials' hashes and pairing secrets are
// internal/bridge/device/store; every refusal is a row of
// internal/bridge/device/apierr.
//
// It imports those three, the web app (web), the bridge's view and audit
// types, agent login's contract and the protocol; it reaches an agent only
// through Backend.Forward, never through the bridge's clients (upstream,
// sources, control), and only the bridge and collie link it
// (internal/suite/deps).
package device
