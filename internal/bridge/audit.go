package bridge

import (
	"log/slog"
	"time"

	"github.com/collie-linux/collie/internal/audit"
	"github.com/collie-linux/collie/internal/device"
	"github.com/collie-linux/collie/internal/wire"
)

// Auditor records the device API's writes in the audit log (A1–A5). A
// failed record is logged, and never blocks or undoes the write (A5).
type Auditor struct {
	Log    *audit.Log
	Logger *slog.Logger
}

// Begin implements device.Recorder: the write's line with the result
// "pending" goes to the log before the write goes to the agent, so a crash
// in between leaves "outcome unknown" rather than nothing (A1, A5).
func (a Auditor) Begin(d device.Device, agent, write string, req wire.Request) device.Outcome {
	who := audit.Who{Session: agent, Device: d.ID}
	p, err := a.Log.Begin(who, eventOf(write, req, audit.OK))
	if err != nil {
		a.Logger.Error("could not note a write in the audit log before forwarding it; the write goes ahead", "err", err, "agent", agent, "device", d.ID)
	}
	return outcome{p: p, log: a.Logger, who: who}
}

type outcome struct {
	p   *audit.Pending
	log *slog.Logger
	who audit.Who
}

// End records how the write ended: "ok", "refused" by the agent, or
// "failed".
func (o outcome) End(result, reason string) {
	r := audit.OK
	switch result {
	case audit.StatusRefused:
		r = audit.Refused(reason)
	case audit.StatusFailed:
		r = audit.Failed(reason)
	}
	if _, err := o.p.End(r); err != nil {
		o.log.Error("could not write the audit log; the write itself went ahead", "err", err, "agent", o.who.Session, "device", o.who.Device)
	}
}

// Refused implements device.Recorder: writes the device API refused
// itself, a forged or revoked credential's included (device "unknown" or
// the revoked device's id, never the credential). r.Count > 1 is a line
// that stands for repeats coalesced (audit.Counted).
func (a Auditor) Refused(r device.Refusal) {
	reason := r.Code
	if r.Reason != "" {
		reason += ": " + r.Reason
	}
	ev := audit.Counted(eventOf(r.Write, r.Req, audit.Refused(reason)), r.Count)
	if _, err := a.Log.Record(audit.Who{Session: r.Agent, Device: r.Device}, ev); err != nil {
		a.Logger.Error("could not write a refused write to the audit log", "err", err, "agent", r.Agent, "device", r.Device, "count", r.Count)
	}
}

// Receipts implements device.Recorder (A6).
func (a Auditor) Receipts(device string, since time.Time) ([]audit.Receipt, error) {
	return a.Log.Receipts(device, since)
}

// eventOf maps a write to its audit event (A3). A request refused before
// it could be read is recorded with what is known: which write it was.
func eventOf(write string, req wire.Request, r audit.Result) audit.Event {
	switch write {
	case "answer":
		var q wire.AnswerRequest
		switch v := req.(type) {
		case *wire.AnswerRequest:
			q = *v
		case *device.AnswerRequest:
			q = v.AnswerRequest
		}
		return audit.AnswerOf(q, r)
	case "send":
		q, _ := req.(*wire.SendRequest)
		return audit.SendOf(deref(q), r)
	case "abort":
		q, _ := req.(*wire.AbortRequest)
		return audit.AbortOf(deref(q), r)
	case "action":
		q, _ := req.(*wire.ActionRequest)
		return audit.ActionOf(deref(q), r)
	case "starter":
		q, _ := req.(*wire.StarterRequest)
		return audit.StarterOf(deref(q), r)
	case "reopen":
		q, _ := req.(*wire.ReopenRequest)
		return audit.ReopenOf(deref(q), r)
	case "rename":
		q, _ := req.(*wire.RenameRequest)
		return audit.RenameOf(deref(q), r)
	case "close":
		q, _ := req.(*wire.CloseRequest)
		return audit.CloseOf(deref(q), r)
	}
	return audit.SendOf(wire.SendRequest{}, r)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
