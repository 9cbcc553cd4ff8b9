package board

import (
	"net/http"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Grants implements durable.App.
func (b *Board) Grants() wire.GrantsReply {
	b.mu.Lock()
	defer b.mu.Unlock()
	return wire.GrantsReply{Grants: b.grants.List(time.Now())}
}

// Revoke implements durable.App.
func (b *Board) Revoke(r *wire.RevokeRequest) (wire.RevokeReply, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	gone, err := b.grants.Revoke(r.Grant, r.All)
	if err != nil {
		return wire.RevokeReply{}, err
	}
	if r.Grant != "" && len(gone) == 0 {
		return wire.RevokeReply{}, durable.Refuse(http.StatusNotFound, wire.CodeUnknownTarget, "there is no grant %q; list them with: collie-agent grants", r.Grant)
	}
	for _, g := range gone {
		b.note(b.opts.Main.ID, "agent", "Always allow revoked: "+g.Scope.Text)
	}
	b.changed()
	return wire.RevokeReply{Revoked: len(gone)}, nil
}
