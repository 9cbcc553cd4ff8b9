package durable

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Snapshot deltas (wire.ExtDelta): to a bridge that announced the
// extension and names in If-None-Match a snapshot this server showed
// lately, a changed snapshot goes as a wire.Delta from that one, marked
// with wire.DeltaHeader, on both transports and in all four encodings.
// Anything a delta cannot say, an ETag no longer kept, or a delta no
// smaller than half the whole snapshot, goes whole.

// historyLen is how many recent snapshots a delta may start from. A bridge
// reads at each change, so it is one or two behind at most.
const historyLen = 8

// version is one snapshot the server showed, copied so that a caller who
// changes what it passed to SetSnapshot cannot change it, with the ETags
// of its four encodings.
type version struct {
	snap  *wire.Snapshot
	etags [4]string
}

// remember records snap, whose encodings are e, as the newest version.
// Callers hold s.mu.
func (s *Server) remember(snap *wire.Snapshot, e encodings) {
	v := version{snap: snap}
	for i := range e {
		v.etags[i] = e[i].etag
	}
	if n := len(s.hist); n >= historyLen {
		s.hist = slices.Delete(s.hist, 0, n-historyLen+1)
	}
	s.hist = append(s.hist, v)
}

// writeSnapshot answers a read with e, the snapshot in the read's
// encoding: as a delta when the read takes one and one can be made, else
// whole.
func (s *Server) writeSnapshot(w http.ResponseWriter, r *http.Request, t Transport, e encoded) {
	if body, base, ok := s.delta(r, t, e); ok {
		w.Header().Set(wire.DeltaHeader, base)
		writeJSON(w, http.StatusOK, body)
		return
	}
	writeJSON(w, http.StatusOK, e.body)
}

// delta makes the delta from the snapshot the read's If-None-Match names
// to e, when the read took deltas and that snapshot is kept.
func (s *Server) delta(r *http.Request, t Transport, e encoded) (body []byte, base string, ok bool) {
	if !wire.HasExtension(r.Header.Get(wire.ExtensionsHeader), wire.ExtDelta) {
		return nil, "", false
	}
	base = strings.TrimSpace(r.Header.Get("If-None-Match"))
	if base == "" || base == e.etag || strings.ContainsAny(base, ",*") {
		return nil, "", false
	}
	i := encodingIndex(t, takesDetail(r))
	var from, to *wire.Snapshot
	s.mu.RLock()
	for _, v := range s.hist {
		if v.etags[i] == base && from == nil {
			from = v.snap
		}
		if v.etags[i] == e.etag {
			to = v.snap
		}
	}
	s.mu.RUnlock()
	if from == nil || to == nil {
		return nil, "", false
	}
	d, ok := wire.Diff(from, to)
	if !ok {
		return nil, "", false
	}
	strip(d, i)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, "", false
	}
	body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(body) >= len(e.body)/2 {
		return nil, "", false // the whole snapshot costs the bridge little more
	}
	return body, base, true
}

// strip takes out of d's questions what encoding i leaves out: the
// "always allow" offers (bit 1) and the details (bit 2).
func strip(d *wire.Delta, i int) {
	for k := range d.Conversations {
		qs := d.Conversations[k].Questions
		for l := range qs {
			if i&1 != 0 {
				qs[l].AllowAlways, qs[l].AlwaysScope = false, nil
			}
			if i&2 != 0 {
				qs[l].Detail = ""
			}
		}
	}
}

// encodingIndex is the index in encodings of the form a read over t gets.
func encodingIndex(t Transport, details bool) int {
	i := 0
	if t.Remote {
		i |= 1
	}
	if !details {
		i |= 2
	}
	return i
}

// copySnapshot copies s deeply enough that no change to s reaches the
// copy: every list and every pointed-to object. Strings are shared.
func copySnapshot(s *wire.Snapshot) *wire.Snapshot {
	c := *s
	c.Spaces = slices.Clone(s.Spaces)
	for i := range c.Spaces {
		sp := &c.Spaces[i]
		sp.Tabs = slices.Clone(sp.Tabs)
		for j := range sp.Tabs {
			tb := &sp.Tabs[j]
			tb.Conversations = slices.Clone(tb.Conversations)
			for k := range tb.Conversations {
				cv := &tb.Conversations[k]
				cv.Items = slices.Clone(cv.Items)
				for l := range cv.Items {
					if t := cv.Items[l].Tool; t != nil {
						cp := *t
						cv.Items[l].Tool = &cp
					}
				}
				cv.Questions = slices.Clone(cv.Questions)
				for l := range cv.Questions {
					q := &cv.Questions[l]
					q.Options, q.Fields = slices.Clone(q.Options), slices.Clone(q.Fields)
					if q.AlwaysScope != nil {
						sc := *q.AlwaysScope
						q.AlwaysScope = &sc
					}
					if q.Push != nil {
						p := *q.Push
						q.Push = &p
					}
				}
			}
		}
	}
	c.Belt, c.Starters = slices.Clone(s.Belt), slices.Clone(s.Starters)
	return &c
}
