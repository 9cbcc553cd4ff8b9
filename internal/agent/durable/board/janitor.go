package board

import (
	"slices"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// orphanAfter is how long a question waits with nobody polling for it
// before the janitor withdraws it.
const orphanAfter = 2 * time.Minute

// janitor withdraws questions whose asker stopped waiting: nothing would
// read their answer.
func (b *Board) janitor() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case now := <-t.C:
			b.mu.Lock()
			changed := false
			for _, c := range b.convs {
				for _, q := range slices.Clone(c.open) {
					if q.req != nil && q.waiters == 0 && now.Sub(q.lastPoll) > orphanAfter {
						q.orphaned = true
						b.decide(q, wire.AskReply{Status: wire.StatusWithdrawn, Reason: "the program that asked stopped waiting"})
						changed = true
					}
				}
			}
			if changed {
				b.changed()
			}
			b.mu.Unlock()
		}
	}
}
