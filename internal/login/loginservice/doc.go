// Package loginservice is the core of the bridge's agent-login service (R1, R5, R8, R13; docs/agent-login.md): it issues the one-time grants
// the platform's agent-login action hands to the collie CLI, exchanges a
// grant and its PKCE verifier for a session, rotates and revokes sessions,
// and authenticates the agent API's bearer tokens. The HTTP handlers
// (internal/login/loginapi) call it; the wire's names, codes and lifetimes are
// internal/login/loginwire's.
//
// # What is stored, and where
//
// One file, Options.Path (the bridge uses
// $XDG_STATE_HOME/collie/agent-sessions.json), mode 0600 in a 0700 folder,
// written whole on every change (internal/linux/atomicfile: a temporary file,
// fsync, rename, folder fsync) before the call that changed it returns. It
// holds:
//
//   - grants: the SHA-256 digest (hex) of each grant, the identity the
//     platform proved for it (agent, server, app), its S256 challenge, when
//     it was issued and expires, when it was consumed and how many wrong
//     verifiers it has seen;
//   - chains: one per login (an exchange), with a 12-hex id shown to the
//     human, its identity, the digests of its current access and refresh
//     tokens and of the last 64 refresh tokens rotated away, the expiries,
//     and when and why it was revoked.
//
// Tokens are never stored: not a grant, not an access or refresh token,
// and never a verifier; only SHA-256 digests of the tokens. No error, log
// line or String() carries a token or a verifier.
//
// Everything in the file survives a restart: Open reads it back (strictly:
// a file it cannot read whole is an error naming the file and saying to
// move it away, never a silent reset), so a pending grant can still be
// exchanged, a consumed one still answers "consumed", a rotated-away refresh
// token is still detected as reuse, and a revoked chain stays revoked. If a
// write fails, an exchange, a grant or a rotation is undone in memory and
// refused with temporarily_unavailable (503); a revocation or a wrong
// verifier's count stays in effect in memory (failing closed) and is saved
// with the next write.
//
// # Lifetimes and limits
//
// A grant lives loginwire.GrantTTL (300 s) and is single-use; five wrong
// verifiers burn it. An access token lives loginwire.AccessTTL (15 min) and
// a refresh token loginwire.RefreshTTL (30 days) from the moment each is
// minted; a refresh mints both anew and retires the old pair at once. So
// that the file cannot grow without bound: at most 16 pending grants per
// agent (AgentKey) and 1,000 in all (a further Grant is refused,
// temporarily_unavailable), so one agent's flood leaves room for the
// others; expired grants,
// consumed ones included, are dropped at every write; one live chain
// per agent (AgentKey): a new login revokes the one before, "a newer
// login", so the agent's older sessions never stay live beside it;
// a chain is dropped 7 days after it ended (revoked or expired); a chain
// keeps the digests of its last 64 rotated-away refresh tokens.
//
// # Concurrency
//
// Every method runs under one mutex, so a grant is consumed once and a
// refresh token rotates once. Twenty processes refreshing with the same
// refresh token at once get one new session and nineteen refusals, and the
// second refusal's presentation of the rotated-away token IS reuse: the
// whole chain is revoked (R8). Honest clients never do this: the collie CLI
// takes an flock(2) on its refresh.lock and re-reads the store before it
// refreshes (single flight, docs/agent-login.md), so only a stolen refresh
// token racing its owner trips the wire.
package loginservice
