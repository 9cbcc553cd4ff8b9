package audit

import (
	"errors"
	"fmt"
	"sync"
)

// StatusPending is the result of the line Log.Begin writes: the write is
// on its way to the agent, and its outcome is not known yet.
const StatusPending = "pending"

// Pending is a write begun with Log.Begin, whose outcome End records.
type Pending struct {
	l      *Log
	who    Who
	ev     Event
	intent string // hash of the pending line; "" when Begin could not write it

	mu    sync.Mutex
	ended bool
}

// Begin records that a write from a device is about to be forwarded to
// the agent, before it is: the event's line with the result "pending"
// (A5: the log still blocks nothing). Forward the write, then call End
// with its outcome, which writes the event's line again with the result
// and an "intent" field naming the pending line. A crash between the two
// leaves a pending line without an end, which Verify lists in
// Report.Unfinished and collie audit shows as "outcome unknown: the
// bridge stopped": the agent may or may not have carried the write out.
// Writes refused before they reach the agent need no Begin: Record them.
//
// Begin always returns a Pending, even with an error (log it and go on):
// End then records the outcome as Record would, without an intent. The
// result ev carries is ignored.
func (l *Log) Begin(who Who, ev Event) (*Pending, error) {
	if ev == nil {
		return nil, errors.New("audit: Begin needs an event")
	}
	p := &Pending{l: l, who: who, ev: ev}
	_, hash, err := l.record(who, ev, Result{status: StatusPending}, "")
	if err != nil {
		return p, fmt.Errorf("audit: the %s write could not be noted before it was forwarded: %w", ev.Name(), err)
	}
	p.intent = hash
	return p, nil
}

// End records the outcome of the write: OK, Refused(reason) or
// Failed(reason). For the five taps it files and returns the receipt, as
// Record does. A second End is an error and writes nothing.
func (p *Pending) End(r Result) (Receipt, error) {
	if r.status == "" || r.status == StatusPending {
		return Receipt{}, errors.New("audit: End needs a result: audit.OK, audit.Refused(reason) or audit.Failed(reason)")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return Receipt{}, fmt.Errorf("audit: the %s write was ended already", p.ev.Name())
	}
	p.ended = true
	rc, _, err := p.l.record(p.who, p.ev, r, p.intent)
	return rc, err
}
