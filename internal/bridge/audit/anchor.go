package audit

import (
	"fmt"
	"path/filepath"
	"time"
)

// DefaultAnchorEvery is how many records a Log writes between two anchors
// (Options.AnchorEvery).
const DefaultAnchorEvery = 16

// Anchor is the chain's head at one moment, written down outside the log
// (the daemon sends it to the journal): the hash of a record and when
// that record was written. The chain has no key, so whoever can write the
// log can truncate it or rewrite it whole with every prev recomputed;
// Report.CheckAnchors then finds the anchored records missing. See the
// package doc, "Anchors", for what this does and does not show.
type Anchor struct {
	Dir  string    // the state folder whose log it is, absolute
	Head string    // hex SHA-256 of the record's line
	Time time.Time // the record's time
	// Logged is when the anchor was written down (the journal entry's
	// time); zero when not known.
	Logged time.Time
}

// anchorState is what the Log needs to anchor: guarded by mu.
type anchorState struct {
	count int       // records written since the last anchor
	last  string    // the head last anchored (or found at Open)
	time  time.Time // the time of the newest record written
}

// anchorDue notes a record written at t and returns the anchor due after
// it, every AnchorEvery records. Caller holds mu.
func (l *Log) anchorDue(t time.Time) *Anchor {
	l.anchor.count++
	l.anchor.time = t
	if l.opts.Anchor == nil || l.anchor.count < l.opts.AnchorEvery {
		return nil
	}
	return l.takeAnchor()
}

// takeAnchor is the anchor of the current head, unless it was anchored
// already or no record was written. Caller holds mu.
func (l *Log) takeAnchor() *Anchor {
	if l.opts.Anchor == nil || l.head == l.anchor.last || l.anchor.time.IsZero() {
		return nil
	}
	l.anchor.count, l.anchor.last = 0, l.head
	return &Anchor{Dir: l.dir, Head: l.head, Time: l.anchor.time.UTC().Truncate(time.Millisecond)}
}

// AnchorCheck is what Report.CheckAnchors found.
type AnchorCheck struct {
	// Anchors counts the anchors of this log that were given.
	Anchors int `json:"anchors"`
	// Found counts those whose record is in the log.
	Found int `json:"found"`
	// RotatedAway counts those older than the oldest record kept, in a
	// rotated file no longer kept (Report.ContinuesFrom): not checked.
	RotatedAway int `json:"rotatedAway,omitempty"`
	// Newest is the newest anchor found in the log, nil when none.
	Newest *Anchor `json:"newest,omitempty"`
	// Unanchored counts the records after the newest anchor found: no
	// anchor covers them, so their removal or rewrite cannot be seen.
	Unanchored int `json:"unanchored"`
}

// CheckAnchors checks the log of the Report against anchors written
// down elsewhere: each must name a record the log holds. An anchor whose
// record is missing means records were removed from the end of the log
// (truncation after the anchor) or the log was rewritten with its hashes
// recomputed, and is a Problem (Line 0: the log as a whole). Anchors of
// another state folder than dir are ignored; anchors older than every
// record of a log that continues from a rotated file no longer kept are
// counted apart. It fills r.Anchors.
func (r *Report) CheckAnchors(dir string, anchors []Anchor) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		dir = abs
	}
	check := &AnchorCheck{}
	r.Anchors = check
	var missing []Anchor
	newestAt := 0
	for _, a := range anchors {
		if filepath.Clean(a.Dir) != dir {
			continue
		}
		check.Anchors++
		at, ok := r.position[a.Head]
		switch {
		case ok:
			check.Found++
			if at > newestAt {
				newestAt = at
				check.Newest = &a
			}
		case r.ContinuesFrom != "" && a.Time.Before(r.First):
			check.RotatedAway++
		default:
			missing = append(missing, a)
		}
	}
	check.Unanchored = r.Records - newestAt
	if len(missing) == 0 {
		return
	}
	last := missing[0]
	for _, a := range missing[1:] {
		if a.Time.After(last.Time) || a.Time.Equal(last.Time) && a.Logged.After(last.Logged) {
			last = a
		}
	}
	file := filepath.Join(dir, LogName)
	if n := len(r.Files); n > 0 {
		file = r.Files[n-1]
	}
	what := fmt.Sprintf("the journal anchors a record of %s (head %s) that the log does not hold", last.Time.UTC().Format(timeLayout), last.Head)
	if len(missing) > 1 {
		what = fmt.Sprintf("%d anchors in the journal name records the log does not hold; the newest, of %s (head %s)", len(missing), last.Time.UTC().Format(timeLayout), last.Head)
	}
	switch {
	case r.Records == 0:
		what += ": the log was removed or emptied"
	case !last.Time.Before(r.Last):
		what += fmt.Sprintf(", and is no older than the log's last record (%s): records were removed from its end", r.Last.UTC().Format(timeLayout))
	default:
		what += ": records up to it were removed, or the log was rewritten with its hashes recomputed"
	}
	r.Problems = append(r.Problems, Problem{File: file, Line: 0, What: what})
}
