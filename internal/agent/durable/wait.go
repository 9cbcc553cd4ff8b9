package durable

import (
	"net/http"
	"strconv"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Waiting reads: GET /v1/snapshot with If-None-Match and
// "Collie-Wait: <seconds>" is held until the snapshot's ETag differs from
// If-None-Match, answered 200 with the new snapshot at once, or answered
// 304 when the wait ends. Either answer carries "Collie-Waited: <seconds>",
// which tells the bridge this agent knows waiting reads. The wait is on
// the server's change notification (notify), never a poll.

// waitSlack is how long past its wait a held reply may take to be written.
const waitSlack = 10 * time.Second

// notify wakes every waiting read: the snapshot or its source changed.
func (s *Server) notify() {
	s.changeMu.Lock()
	close(s.change)
	s.change = make(chan struct{})
	s.changeMu.Unlock()
}

// changes returns a channel closed at the next notify.
func (s *Server) changes() <-chan struct{} {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	return s.change
}

// serveWaiting answers a read that asked to wait up to secs seconds.
func (s *Server) serveWaiting(w http.ResponseWriter, r *http.Request, t Transport, secs int) {
	inm := r.Header.Get("If-None-Match")
	wait := time.Duration(secs) * time.Second
	var end <-chan time.Time
	for {
		// Take the channel before reading the snapshot: a change after
		// the read closes it, so none is missed.
		changed := s.changes()
		e := s.current(t, takesDetail(r))
		h := w.Header()
		h.Set("ETag", e.etag)
		if inm == "" || !etagMatch(inm, e.etag) {
			h.Set(wire.WaitedHeader, strconv.Itoa(secs))
			s.writeSnapshot(w, r, t, e)
			return
		}
		if end == nil {
			// The server's timeouts are shorter than a long wait: without
			// this the connection would be cut, or the request's context
			// cancelled, while the read waits (as for an ask).
			rc := http.NewResponseController(w)
			rc.SetReadDeadline(time.Time{})
			rc.SetWriteDeadline(time.Now().Add(wait + waitSlack))
			timer := time.NewTimer(wait)
			defer timer.Stop()
			end = timer.C
		}
		select {
		case <-changed:
		case <-end:
			h.Set(wire.WaitedHeader, strconv.Itoa(secs))
			w.WriteHeader(http.StatusNotModified)
			return
		case <-r.Context().Done():
			// The bridge went away, or the agent is stopping: a 304 that
			// does not claim the wait, so the bridge reads again at its
			// cadence and finds out which.
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
}
