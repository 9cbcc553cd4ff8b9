package loginservice

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Grant issues a single-use grant for id bound to challenge (an S256
// challenge, loginwire.ValidChallenge), valid loginwire.GrantTTL (300 s).
// Only the grant's digest is stored. Persisted before it returns (R5).
func (s *Store) Grant(id Identity, challenge string) (grant string, expires time.Time, err error) {
	if err := id.Validate(); err != nil {
		return "", time.Time{}, refuse(loginwire.CodeInvalid, "The platform's identity for this login is not valid: "+err.Error()+".")
	}
	if !loginwire.ValidChallenge(challenge) {
		return "", time.Time{}, refuse(loginwire.CodeInvalid, "The code challenge is not an S256 challenge (43 characters of unpadded base64url, the SHA-256 of the verifier); run `collie login` again.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	// One agent's flood of logins never locks the others out: it runs
	// into its own limit long before the bridge's.
	all, its := s.st.pending(now, id.Key())
	if its >= maxPendingPerAgent {
		s.log.Warn("refused a grant: this agent has too many logins waiting to be completed", "pending", its, "agent", id.Agent, "server", id.Server)
		return "", time.Time{}, refuse(loginwire.CodeTemporarilyUnavailable, fmt.Sprintf("This agent has %d logins waiting to be completed on this bridge; a login's grant expires 5 minutes after it was issued, so try again then.", its))
	}
	if all >= maxPendingGrants {
		s.log.Warn("refused a grant: too many pending grants", "pending", maxPendingGrants, "agent", id.Agent)
		return "", time.Time{}, refuse(loginwire.CodeTemporarilyUnavailable, "Too many logins are waiting to be completed on this bridge; try again in a few minutes.")
	}
	grant, digest := newToken(GrantPrefix)
	expires = now.Add(loginwire.GrantTTL)
	next := s.st.clone()
	next.grants[digest] = &grantRec{Digest: digest, Identity: id, Challenge: challenge, Issued: now, Expires: expires}
	if err := s.save(next, now, false); err != nil {
		return "", time.Time{}, unavailable()
	}
	s.log.Info("issued an agent-login grant", "agent", id.Agent, "server", id.Server, "app", id.App, "expires", expires)
	return grant, expires, nil
}

// Exchange checks verifier (loginwire.ValidVerifier, then
// loginwire.Challenge(verifier) == the stored challenge, compared in
// constant time) and, atomically with consuming the grant, mints a session
// (a new chain) for the grant's stored identity. Identity comes only from
// the grant record (R5).
//
// A wrong verifier does not consume the grant (a thief of the grant alone
// cannot burn it) until the fifth, which burns it. If the store cannot be
// written, nothing changes (the grant stays usable) and the refusal is
// temporarily_unavailable.
func (s *Store) Exchange(grant, verifier string) (Tokens, error) {
	if !loginwire.ValidVerifier(verifier) {
		return Tokens{}, refuse(loginwire.CodeInvalid, "The code verifier is not an RFC 7636 verifier (43 to 128 of A-Z, a-z, 0-9, '-', '.', '_', '~'); run `collie login` again.")
	}
	errUnknown := refuse(loginwire.CodeInvalid, "The login grant is not known to this bridge; run `collie login` again.")
	digest, ok := tokenDigest(GrantPrefix, grant)
	if !ok {
		return Tokens{}, errUnknown
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	g := s.st.grants[digest]
	switch {
	case g == nil:
		return Tokens{}, errUnknown
	case !g.Consumed.IsZero():
		s.log.Warn("refused a replayed agent-login grant", "agent", g.Identity.Agent)
		return Tokens{}, refuse(loginwire.CodeConsumed, "The login grant was already used; run `collie login` again for a new one.")
	case !now.Before(g.Expires):
		return Tokens{}, refuse(loginwire.CodeExpired, "The login grant expired (a grant lives 300 seconds); run `collie login` again.")
	case g.Identity.Validate() != nil:
		s.log.Error("refused an agent-login grant whose stored identity is not valid")
		return Tokens{}, refuse(loginwire.CodeBindingMismatch, "The login grant is not bound to a valid agent, server and app; run `collie login` again.")
	}
	if subtle.ConstantTimeCompare([]byte(loginwire.Challenge(verifier)), []byte(g.Challenge)) != 1 {
		next := s.st.clone()
		ng := next.grants[digest]
		ng.Mismatches++
		if ng.Mismatches >= maxProofMismatches {
			ng.Consumed = now
		}
		// A wrong verifier's count holds even if the write fails.
		_ = s.save(next, now, true)
		s.log.Warn("refused an agent-login exchange: the verifier does not match the grant's challenge",
			"agent", g.Identity.Agent, "mismatches", ng.Mismatches, "burned", !ng.Consumed.IsZero())
		return Tokens{}, refuse(loginwire.CodeGrantProofMismatch, "The code verifier does not match the login grant's challenge; run `collie login` again.")
	}

	next := s.st.clone()
	next.grants[digest].Consumed = now
	c, tok := mint(next, g.Identity, now)
	evicted := next.limitChains(c, now)
	if err := s.save(next, now, false); err != nil {
		return Tokens{}, unavailable()
	}
	s.log.Info("an agent logged in", "chain", c.ID, "agent", c.Identity.Agent, "server", c.Identity.Server, "app", c.Identity.App)
	for _, id := range evicted {
		s.log.Info("revoked an agent session for a newer login", "chain", id, "agent", c.Identity.Agent)
	}
	return tok, nil
}

// mint adds a new chain for id to st with fresh tokens.
func mint(st *state, id Identity, now time.Time) (*chainRec, Tokens) {
	chainID := newChainID()
	for st.chains[chainID] != nil {
		chainID = newChainID()
	}
	access, accessDigest := newToken(AccessPrefix)
	refresh, refreshDigest := newToken(RefreshPrefix)
	c := &chainRec{ID: chainID, Identity: id, Created: now,
		Access: accessDigest, AccessExpires: now.Add(loginwire.AccessTTL),
		Refresh: refreshDigest, RefreshExpires: now.Add(loginwire.RefreshTTL)}
	st.chains[chainID] = c
	st.tokens[accessDigest] = tokenRef{chainID, kindAccess}
	st.tokens[refreshDigest] = tokenRef{chainID, kindRefresh}
	return c, Tokens{Access: access, AccessExpires: c.AccessExpires, Refresh: refresh, RefreshExpires: c.RefreshExpires}
}

// limitChains revokes the oldest live chains of c's agent (AgentKey)
// beyond the limit, never c itself, and returns their ids: with the limit
// of one, a new login replaces the agent's session before it.
func (st *state) limitChains(c *chainRec, now time.Time) []string {
	var others []*chainRec
	for _, o := range st.chains {
		if o != c && o.Identity.Key() == c.Identity.Key() && o.live(now) {
			others = append(others, o)
		}
	}
	slices.SortFunc(others, func(a, b *chainRec) int {
		if x := a.Created.Compare(b.Created); x != 0 {
			return x
		}
		return cmp.Compare(a.ID, b.ID)
	})
	var evicted []string
	for len(others) > maxLiveChains-1 {
		others[0].Revoked, others[0].RevokedWhy = now, WhyNewerLogin
		evicted = append(evicted, others[0].ID)
		others = others[1:]
	}
	return evicted
}

// logAttrs is the chain's identity for a log line.
func (c *chainRec) logAttrs() []any {
	return []any{slog.String("chain", c.ID), slog.String("agent", c.Identity.Agent), slog.String("server", c.Identity.Server)}
}
