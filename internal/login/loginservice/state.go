package loginservice

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/collie-linux/collie/internal/login/loginwire"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
)

// fileSchema names the store file's format.
const fileSchema = "collie-agent-sessions.v1"

// file is the store's file. Members are exact and closed (jsonstrict).
type file struct {
	Schema string     `json:"schema"`
	Grants []grantRec `json:"grants"`
	Chains []chainRec `json:"chains"`
}

// grantRec is one issued grant. Only the grant's digest is kept.
type grantRec struct {
	Digest     string    `json:"digest"` // hex SHA-256 of the grant
	Identity   Identity  `json:"identity"`
	Challenge  string    `json:"challenge"` // S256, loginwire.ValidChallenge
	Issued     time.Time `json:"issued"`
	Expires    time.Time `json:"expires"`
	Consumed   time.Time `json:"consumed,omitzero"` // exchanged, or burned by wrong verifiers
	Mismatches int       `json:"mismatches,omitzero"`
}

// chainRec is one login and its rotations. Only token digests are kept.
type chainRec struct {
	ID             string    `json:"id"`
	Identity       Identity  `json:"identity"`
	Created        time.Time `json:"created"`
	Refreshed      time.Time `json:"refreshed,omitzero"`
	Access         string    `json:"access_digest"`
	AccessExpires  time.Time `json:"access_expires"`
	Refresh        string    `json:"refresh_digest"`
	RefreshExpires time.Time `json:"refresh_expires"`
	Rotated        []string  `json:"rotated,omitempty"` // digests of rotated-away refresh tokens, oldest first, at most maxRotated
	Revoked        time.Time `json:"revoked,omitzero"`
	RevokedWhy     string    `json:"revoked_why,omitempty"`
}

// live reports whether c can still authenticate or refresh at now.
func (c *chainRec) live(now time.Time) bool {
	return c.Revoked.IsZero() && now.Before(c.RefreshExpires)
}

// ended is when c stopped being live (revoked or expired), and false
// while it is live.
func (c *chainRec) ended(now time.Time) (time.Time, bool) {
	switch {
	case !c.Revoked.IsZero() && c.Revoked.Before(c.RefreshExpires):
		return c.Revoked, true
	case !now.Before(c.RefreshExpires):
		return c.RefreshExpires, true
	case !c.Revoked.IsZero():
		return c.Revoked, true
	}
	return time.Time{}, false
}

func (c *chainRec) public() Chain {
	return Chain{ID: c.ID, Identity: c.Identity, Created: c.Created, Refreshed: c.Refreshed,
		AccessExpires: c.AccessExpires, RefreshExpires: c.RefreshExpires, Revoked: c.Revoked, RevokedWhy: c.RevokedWhy}
}

// tokenKind says which of a chain's digests a token is.
type tokenKind uint8

const (
	kindAccess tokenKind = iota + 1
	kindRefresh
	kindRotated
)

type tokenRef struct {
	chain string
	kind  tokenKind
}

// state is the store in memory: the records, and an index of every token
// digest.
type state struct {
	grants map[string]*grantRec // by digest
	chains map[string]*chainRec // by id
	tokens map[string]tokenRef  // token digest -> its chain
}

func newState() *state {
	return &state{grants: map[string]*grantRec{}, chains: map[string]*chainRec{}, tokens: map[string]tokenRef{}}
}

// clone is a deep copy, for a change that may be undone.
func (st *state) clone() *state {
	n := &state{grants: make(map[string]*grantRec, len(st.grants)), chains: make(map[string]*chainRec, len(st.chains)),
		tokens: maps.Clone(st.tokens)}
	for k, g := range st.grants {
		c := *g
		n.grants[k] = &c
	}
	for k, ch := range st.chains {
		c := *ch
		c.Rotated = slices.Clone(ch.Rotated)
		n.chains[k] = &c
	}
	return n
}

// reindex rebuilds the token index from the chains.
func (st *state) reindex() {
	st.tokens = make(map[string]tokenRef, 2*len(st.chains))
	for id, c := range st.chains {
		for _, d := range c.Rotated {
			st.tokens[d] = tokenRef{id, kindRotated}
		}
		st.tokens[c.Access] = tokenRef{id, kindAccess}
		st.tokens[c.Refresh] = tokenRef{id, kindRefresh}
	}
}

// prune drops what the limits say is no longer kept: grants past their
// expiry (consumed or not), and chains 7 days after they ended.
func (st *state) prune(now time.Time) {
	for d, g := range st.grants {
		if !now.Before(g.Expires) {
			delete(st.grants, d)
		}
	}
	for id, c := range st.chains {
		if end, ok := c.ended(now); ok && !now.Before(end.Add(keepEnded)) {
			delete(st.chains, id)
		}
	}
}

// pending counts grants that can still be exchanged: all of them, and
// those of agent.
func (st *state) pending(now time.Time, agent AgentKey) (all, its int) {
	for _, g := range st.grants {
		if g.Consumed.IsZero() && now.Before(g.Expires) {
			all++
			if g.Identity.Key() == agent {
				its++
			}
		}
	}
	return all, its
}

// sortedChains is every chain, newest first (ties by id).
func (st *state) sortedChains() []*chainRec {
	cs := slices.Collect(maps.Values(st.chains))
	slices.SortFunc(cs, func(a, b *chainRec) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return cs
}

// encode is the file's bytes: indented JSON, grants oldest first, chains
// oldest first, so the same state always writes the same bytes.
func encode(st *state) ([]byte, error) {
	f := file{Schema: fileSchema, Grants: []grantRec{}, Chains: []chainRec{}}
	for _, g := range st.grants {
		f.Grants = append(f.Grants, *g)
	}
	slices.SortFunc(f.Grants, func(a, b grantRec) int {
		if c := a.Issued.Compare(b.Issued); c != 0 {
			return c
		}
		return cmp.Compare(a.Digest, b.Digest)
	})
	cs := st.sortedChains()
	for i := len(cs) - 1; i >= 0; i-- {
		f.Chains = append(f.Chains, *cs[i])
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode the agent session store: %w", err)
	}
	return append(b, '\n'), nil
}

// decode reads the file strictly: closed schema, exact names, no member
// twice, and every value checked; times are kept in UTC.
func decode(data []byte) (*state, error) {
	var f file
	if err := jsonstrict.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	if f.Schema != fileSchema {
		return nil, fmt.Errorf("its schema is not %q", fileSchema)
	}
	st := newState()
	for i := range f.Grants {
		g := f.Grants[i]
		if err := g.check(); err != nil {
			return nil, fmt.Errorf("grant %d: %w", i, err)
		}
		if st.grants[g.Digest] != nil {
			return nil, fmt.Errorf("grant %d: its digest appears twice", i)
		}
		st.grants[g.Digest] = &g
	}
	seen := map[string]bool{}
	for i := range f.Chains {
		c := f.Chains[i]
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("chain %d: %w", i, err)
		}
		if st.chains[c.ID] != nil {
			return nil, fmt.Errorf("chain %d: its id appears twice", i)
		}
		for _, d := range append([]string{c.Access, c.Refresh}, c.Rotated...) {
			if seen[d] {
				return nil, fmt.Errorf("chain %d: a token digest appears twice in the store", i)
			}
			seen[d] = true
		}
		if len(c.Rotated) == 0 {
			c.Rotated = nil
		}
		st.chains[c.ID] = &c
	}
	st.reindex()
	return st, nil
}

// utcTimes sets each time to UTC and checks it is set (when required)
// and between the years 2000 and 9999.
func utcTimes(ts ...timeField) error {
	for _, x := range ts {
		if x.t.IsZero() {
			if x.required {
				return fmt.Errorf("%s is missing", x.name)
			}
			continue
		}
		*x.t = x.t.UTC()
		if y := x.t.Year(); y < 2000 || y > 9999 {
			return fmt.Errorf("%s is not between the years 2000 and 9999", x.name)
		}
	}
	return nil
}

// timeField is one time of a record, for utcTimes.
type timeField struct {
	name     string
	t        *time.Time
	required bool
}

func (g *grantRec) check() error {
	switch {
	case !isHex(g.Digest, 64):
		return fmt.Errorf("its digest is not 64 lowercase hex digits")
	case g.Identity.Validate() != nil:
		return g.Identity.Validate()
	case !loginwire.ValidChallenge(g.Challenge):
		return fmt.Errorf("its challenge is not an S256 challenge")
	case g.Mismatches < 0 || g.Mismatches > maxProofMismatches:
		return fmt.Errorf("its mismatches is not 0 to %d", maxProofMismatches)
	}
	if err := utcTimes(timeField{"issued", &g.Issued, true}, timeField{"expires", &g.Expires, true},
		timeField{"consumed", &g.Consumed, false}); err != nil {
		return err
	}
	if !g.Expires.After(g.Issued) {
		return fmt.Errorf("it expires before it was issued")
	}
	return nil
}

func (c *chainRec) check() error {
	switch {
	case !isHex(c.ID, 12):
		return fmt.Errorf("its id is not 12 lowercase hex digits")
	case c.Identity.Validate() != nil:
		return c.Identity.Validate()
	case !isHex(c.Access, 64) || !isHex(c.Refresh, 64):
		return fmt.Errorf("a token digest is not 64 lowercase hex digits")
	case len(c.Rotated) > maxRotated:
		return fmt.Errorf("it keeps more than %d rotated refresh tokens", maxRotated)
	case len(c.RevokedWhy) > 200 || !utf8.ValidString(c.RevokedWhy) || hasControl(c.RevokedWhy):
		return fmt.Errorf("its revoked_why is not a line of at most 200 bytes")
	case c.Revoked.IsZero() != (c.RevokedWhy == ""):
		return fmt.Errorf("revoked and revoked_why must be given together")
	}
	for _, d := range c.Rotated {
		if !isHex(d, 64) {
			return fmt.Errorf("a rotated token digest is not 64 lowercase hex digits")
		}
	}
	return utcTimes(timeField{"created", &c.Created, true}, timeField{"refreshed", &c.Refreshed, false},
		timeField{"access_expires", &c.AccessExpires, true}, timeField{"refresh_expires", &c.RefreshExpires, true},
		timeField{"revoked", &c.Revoked, false})
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || 0x80 <= r && r <= 0x9f {
			return true
		}
	}
	return false
}
