package loginservice

import (
	"fmt"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// Refresh rotates: the presented refresh token must be its chain's current
// one; it returns a new access and a new refresh token (the old access
// token stops working at once). A refresh token that was already rotated
// away (reuse) revokes its whole chain and fails. Expired -> expired.
// Unknown/revoked -> invalid (R8).
//
// Two refreshes with the same token at once are reuse for the second: the
// collie CLI's flock single flight is what keeps an honest client from it.
func (s *Store) Refresh(refresh string) (Tokens, error) {
	errInvalid := refuse(loginwire.CodeInvalid, "The refresh token is not valid (unknown, revoked or already used); run `collie login` again.")
	digest, ok := tokenDigest(RefreshPrefix, refresh)
	if !ok {
		return Tokens{}, errInvalid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	ref, ok := s.st.tokens[digest]
	if !ok || ref.kind == kindAccess {
		return Tokens{}, errInvalid
	}
	c := s.st.chains[ref.chain]
	if !c.Revoked.IsZero() {
		return Tokens{}, errInvalid
	}
	if ref.kind == kindRotated {
		if now.Before(c.RefreshExpires) {
			next := s.st.clone()
			revoke(next.chains[c.ID], now, WhyReuse)
			// The revocation holds in memory even if the write fails.
			_ = s.save(next, now, true)
			s.log.Warn("a rotated-away refresh token was presented again: revoked its agent session", c.logAttrs()...)
		}
		return Tokens{}, errInvalid
	}
	if !now.Before(c.RefreshExpires) {
		return Tokens{}, refuse(loginwire.CodeExpired, "The refresh token expired (a session lives 30 days without a refresh); run `collie login` again.")
	}
	next := s.st.clone()
	nc := next.chains[c.ID]
	access, accessDigest := newToken(AccessPrefix)
	newRefresh, refreshDigest := newToken(RefreshPrefix)
	nc.Rotated = append(nc.Rotated, nc.Refresh)
	if len(nc.Rotated) > maxRotated {
		nc.Rotated = append([]string(nil), nc.Rotated[len(nc.Rotated)-maxRotated:]...)
	}
	nc.Access, nc.AccessExpires = accessDigest, now.Add(loginwire.AccessTTL)
	nc.Refresh, nc.RefreshExpires = refreshDigest, now.Add(loginwire.RefreshTTL)
	nc.Refreshed = now
	if err := s.save(next, now, false); err != nil {
		return Tokens{}, unavailable()
	}
	s.log.Info("rotated an agent session's tokens", c.logAttrs()...)
	return Tokens{Access: access, AccessExpires: nc.AccessExpires, Refresh: newRefresh, RefreshExpires: nc.RefreshExpires}, nil
}

// revoke marks c revoked at now, for why.
func revoke(c *chainRec, now time.Time, why string) {
	c.Revoked, c.RevokedWhy = now, why
}

// Revoke revokes the chain that refresh (current or rotated) or access
// belongs to; either may be "". Unknown tokens are not an error (RFC 7009
// style): it reports whether a chain was revoked. Should the store not be
// written, the revocation holds in memory all the same and the error is
// temporarily_unavailable.
func (s *Store) Revoke(refresh, access string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	var ids []string
	if d, ok := tokenDigest(RefreshPrefix, refresh); ok {
		if ref, ok := s.st.tokens[d]; ok && ref.kind != kindAccess {
			ids = append(ids, ref.chain)
		}
	}
	if d, ok := tokenDigest(AccessPrefix, access); ok {
		if ref, ok := s.st.tokens[d]; ok && ref.kind == kindAccess {
			ids = append(ids, ref.chain)
		}
	}
	var next *state
	for _, id := range ids {
		if !s.st.chains[id].live(now) {
			continue
		}
		if next == nil {
			next = s.st.clone()
		}
		if c := next.chains[id]; c.Revoked.IsZero() {
			revoke(c, now, WhyLogout)
			s.log.Info("an agent logged out: revoked its session", c.logAttrs()...)
		}
	}
	if next == nil {
		return false, nil
	}
	if err := s.save(next, now, true); err != nil {
		return true, unavailable()
	}
	return true, nil
}

// Authenticate returns the live session of an access token, or an *Error
// with Code loginwire.CodeInvalid (unknown, revoked, rotated away) or
// loginwire.CodeExpired.
func (s *Store) Authenticate(access string) (Session, error) {
	errInvalid := refuse(loginwire.CodeInvalid, "The access token is not valid (unknown, revoked or replaced by a refresh); refresh the session, or run `collie login` again.")
	digest, ok := tokenDigest(AccessPrefix, access)
	if !ok {
		return Session{}, errInvalid
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	ref, ok := s.st.tokens[digest]
	if !ok || ref.kind != kindAccess {
		return Session{}, errInvalid
	}
	c := s.st.chains[ref.chain]
	switch {
	case !c.Revoked.IsZero():
		return Session{}, errInvalid
	case !now.Before(c.AccessExpires) || !now.Before(c.RefreshExpires):
		return Session{}, refuse(loginwire.CodeExpired, "The access token expired; refresh the session with its refresh token.")
	}
	return Session{Chain: c.ID, Identity: c.Identity, AccessExpires: c.AccessExpires, RefreshExpires: c.RefreshExpires}, nil
}

// List is every chain the store remembers (live and revoked), newest
// first, for `collie agents list`.
func (s *Store) List() []Chain {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.st.sortedChains()
	out := make([]Chain, len(cs))
	for i, c := range cs {
		out[i] = c.public()
	}
	return out
}

// RevokeAgent revokes, for the human (`collie agents revoke ID`), every
// live chain whose Chain.ID == id, or whose Identity.Agent == id. It
// reports how many were revoked; when none matched it returns an *Error
// (invalid) saying how to list them. Should the store not be written, the
// revocations hold in memory all the same and the error says so.
func (s *Store) RevokeAgent(id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	var next *state
	var n int
	for cid, c := range s.st.chains {
		if (cid != id && c.Identity.Agent != id) || !c.live(now) {
			continue
		}
		if next == nil {
			next = s.st.clone()
		}
		nc := next.chains[cid]
		revoke(nc, now, WhyUser)
		s.log.Info("the user revoked an agent session", nc.logAttrs()...)
		n++
	}
	if n == 0 {
		return 0, refuse(loginwire.CodeInvalid, fmt.Sprintf("no live agent session matches %s; list them with: collie agents list", quoteID(id)))
	}
	if err := s.save(next, now, true); err != nil {
		return n, refuse(loginwire.CodeTemporarilyUnavailable, fmt.Sprintf("revoked %d agent session(s) until the bridge restarts, but could not save that; look at the bridge's log (journalctl --user -u collie) and run the command again", n))
	}
	return n, nil
}

// quoteID shows what the human typed, unless it could be a credential
// (one of Collie's token prefixes) or is not an id at all.
func quoteID(id string) string {
	if !loginwire.ValidID(id) || strings.HasPrefix(id, "collie_") {
		return "the given ID"
	}
	return `"` + id + `"`
}
