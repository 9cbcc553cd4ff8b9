package loginservice

import (
	"context"
	"errors"
)

// ErrRevoked ends the context of Watch: the session was revoked (by
// logout, by the user, by a newer login, or for a reused refresh token).
var ErrRevoked = errors.New("the agent session was revoked")

// ErrAgentEnded ends the context of WatchAgent: the agent has no live
// session left.
var ErrAgentEnded = errors.New("the agent has no live session")

// watch is one Watch or WatchAgent: its context ends when its chain is
// revoked, or when its agent has no live chain left.
type watch struct {
	chain  string // "" for WatchAgent
	agent  AgentKey
	cancel context.CancelCauseFunc
}

// Watch returns a context that ends, with the cause ErrRevoked, the moment
// chain is revoked (at once when it is not live now), and when parent
// ends. Whatever a session authorised runs under it, so a revocation cuts
// a request already waiting, as revoking a device does. stop releases it.
func (s *Store) Watch(parent context.Context, chain string) (ctx context.Context, stop context.CancelFunc) {
	return s.watch(parent, &watch{chain: chain})
}

// WatchAgent returns a context that ends, with the cause ErrAgentEnded,
// when agent has no live session left: at once when it has none now, the
// moment its last one is revoked, and at the first write of the store
// after its last one expired. stop releases it.
func (s *Store) WatchAgent(parent context.Context, agent AgentKey) (ctx context.Context, stop context.CancelFunc) {
	return s.watch(parent, &watch{agent: agent})
}

func (s *Store) watch(parent context.Context, w *watch) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	w.cancel = cancel
	s.mu.Lock()
	if s.ended(w) {
		s.mu.Unlock()
		cancel(w.cause())
		return ctx, func() {}
	}
	if s.watches == nil {
		s.watches = map[*watch]struct{}{}
	}
	s.watches[w] = struct{}{}
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.watches, w)
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}

func (w *watch) cause() error {
	if w.chain != "" {
		return ErrRevoked
	}
	return ErrAgentEnded
}

// ended reports whether w's chain is revoked (or gone), or w's agent has
// no live chain. Callers hold s.mu.
func (s *Store) ended(w *watch) bool {
	if w.chain != "" {
		c := s.st.chains[w.chain]
		return c == nil || !c.Revoked.IsZero()
	}
	now := s.now().UTC()
	for _, c := range s.st.chains {
		if c.Identity.Key() == w.agent && c.live(now) {
			return false
		}
	}
	return true
}

// notify ends the watches the state now ended. save calls it after every
// change of the state. Callers hold s.mu.
func (s *Store) notify() {
	for w := range s.watches {
		if s.ended(w) {
			w.cancel(w.cause())
			delete(s.watches, w)
		}
	}
}
