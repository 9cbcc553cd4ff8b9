// Package login is the group of agent login, each package named for its
// side:
//
//   - loginwire: the contract both halves read (routes, schemas, the closed
//     error codes, the S256 proof)
//   - platformkey: the platform's key, which the bridge checks grants with
//   - loginclient: the client half, in the agent's environment (collie
//     login, logout, the refresh lock, the bearer transport of collie ask)
//   - loginstore: the agent session's files on the client side
//   - loginservice: the bridge's service core (grants, exchange, refresh
//     rotation, revocation, the token digests on disk)
//   - loginapi: the service's HTTP surface beside the device API
//   - loginhost: one board per logged-in agent, hosted in the bridge
//
// The client half (loginclient, loginstore) never links the service's
// token store (loginservice) or its handlers; internal/suite/deps keeps it.
package login
