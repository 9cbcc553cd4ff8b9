// Package grants keeps an agent's "always allow" grants (D7): what a grant
// covers (a tool and the first words of its command, for a time), the set
// of live grants with its lookups, and where they are kept across restarts.
//
// A Scope is offered with a yes-no question that names a tool (ScopeFor);
// an answer "always" adds a grant for it (Set.Add); later calls of that tool
// whose command starts with the scope's words, and holds no shell operator,
// are let through unasked (Set.Match) until the grant expires or is revoked
// (Set.Revoke). A Store keeps them; File is the usual one, a JSON file
// written whole and atomically. A Set is not safe for concurrent use: its
// owner (the board) holds its own lock around it.
package grants

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Set is the live grants of one agent and their store.
type Set struct {
	store Store
	gs    []wire.Grant
}

// Load reads the grants store keeps; a nil store keeps grants in memory
// only.
func Load(store Store) (*Set, error) {
	g := &Set{store: store}
	if store == nil {
		return g, nil
	}
	gs, err := store.Load()
	if err != nil {
		return nil, err
	}
	g.gs = gs
	return g, nil
}

func (g *Set) save(gs []wire.Grant) error {
	if g.store != nil {
		if err := g.store.Save(gs); err != nil {
			return fmt.Errorf("save the grants: %w", err)
		}
	}
	g.gs = gs
	return nil
}

// Add remembers a grant of sc, given in answer to question. When it cannot
// be saved nothing is remembered and the answer that asked for it is
// refused.
func (g *Set) Add(sc wire.Scope, question string, now time.Time) (wire.Grant, error) {
	var id [6]byte
	rand.Read(id[:])
	gr := wire.Grant{
		ID: "g-" + hex.EncodeToString(id[:]), Scope: sc, Question: question,
		Granted: now.UTC().Format(time.RFC3339),
		Expires: now.Add(time.Duration(sc.DurationSeconds) * time.Second).UTC().Format(time.RFC3339),
	}
	gs := append(g.live(now), gr)
	if err := g.save(gs); err != nil {
		return wire.Grant{}, err
	}
	return gr, nil
}

// live returns the grants that have not expired.
func (g *Set) live(now time.Time) []wire.Grant {
	var out []wire.Grant
	for _, gr := range g.gs {
		if exp, err := time.Parse(time.RFC3339, gr.Expires); err == nil && now.Before(exp) {
			out = append(out, gr)
		}
	}
	return out
}

// List returns the grants that have not expired, never nil.
func (g *Set) List(now time.Time) []wire.Grant {
	out := g.live(now)
	if out == nil {
		out = []wire.Grant{}
	}
	return out
}

// Match finds a live grant that covers a call of tool t.
func (g *Set) Match(t wire.ToolRef, now time.Time) (wire.Grant, bool) {
	for _, gr := range g.live(now) {
		if gr.Scope.Tool == t.Name && commandMatches(gr.Scope.CommandPrefix, t.Command) {
			return gr, true
		}
	}
	return wire.Grant{}, false
}

// Revoke drops grant id, or every grant when all is set, and returns what
// it dropped: nothing, and no error, when there was no such grant.
func (g *Set) Revoke(id string, all bool) ([]wire.Grant, error) {
	var gone, keep []wire.Grant
	for _, gr := range g.gs {
		if all || gr.ID == id {
			gone = append(gone, gr)
		} else {
			keep = append(keep, gr)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	if err := g.save(keep); err != nil {
		return nil, err
	}
	return gone, nil
}
