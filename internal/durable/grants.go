package durable

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/atomicfile"
	"github.com/collie-linux/collie/internal/jsonstrict"
	"github.com/collie-linux/collie/internal/wire"
)

// GrantStore keeps "always allow" grants across restarts.
type GrantStore interface {
	Load() ([]wire.Grant, error)
	Save([]wire.Grant) error
}

// FileGrants keeps grants in a JSON file at the path it names, mode 0600,
// replaced whole on every change (a failed write leaves the old file).
type FileGrants string

// Load implements GrantStore; a missing file holds no grants.
func (f FileGrants) Load() ([]wire.Grant, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the grants: %w", err)
	}
	var gs []wire.Grant
	if err := jsonstrict.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("%s is not a list of grants (%v); remove it to start with none", f, err)
	}
	return gs, nil
}

// Save implements GrantStore.
func (f FileGrants) Save(gs []wire.Grant) error {
	b, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(string(f), append(b, '\n'))
}

type grantSet struct {
	store GrantStore
	gs    []wire.Grant
}

func loadGrants(store GrantStore) (*grantSet, error) {
	g := &grantSet{store: store}
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

func (g *grantSet) save(gs []wire.Grant) error {
	if g.store != nil {
		if err := g.store.Save(gs); err != nil {
			return fmt.Errorf("save the grants: %w", err)
		}
	}
	g.gs = gs
	return nil
}

// add remembers a grant. When it cannot be saved nothing is remembered and
// the answer that asked for it is refused.
func (g *grantSet) add(sc wire.Scope, question string, now time.Time) (wire.Grant, error) {
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
func (g *grantSet) live(now time.Time) []wire.Grant {
	var out []wire.Grant
	for _, gr := range g.gs {
		if exp, err := time.Parse(time.RFC3339, gr.Expires); err == nil && now.Before(exp) {
			out = append(out, gr)
		}
	}
	return out
}

func (g *grantSet) list(now time.Time) []wire.Grant {
	out := g.live(now)
	if out == nil {
		out = []wire.Grant{}
	}
	return out
}

func (g *grantSet) match(t wire.ToolRef, now time.Time) (wire.Grant, bool) {
	for _, gr := range g.live(now) {
		if gr.Scope.Tool == t.Name && commandMatches(gr.Scope.CommandPrefix, t.Command) {
			return gr, true
		}
	}
	return wire.Grant{}, false
}

func (g *grantSet) revoke(id string, all bool) ([]wire.Grant, error) {
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

// commandMatches reports whether command falls under a grant's prefix: its
// words start with the prefix's words, and it holds nothing a shell would
// use to run a second command or redirect ("git status; rm -rf ~" starts
// with "git status" too).
func commandMatches(prefix, command string) bool {
	if prefix == "" {
		return true
	}
	if strings.ContainsAny(command, ";&|`$<>()\n\r\\") {
		return false
	}
	p, c := strings.Fields(prefix), strings.Fields(command)
	return len(c) >= len(p) && slices.Equal(c[:len(p)], p)
}
