package bridge

import (
	"log/slog"
	"time"

	"github.com/collie-linux/collie/internal/bridge/audit"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/device/store"
	"github.com/collie-linux/collie/internal/protocol/wire"
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
func (a Auditor) Begin(d store.Device, agent, write string, req wire.WriteRequest) device.Outcome {
	who := audit.Who{Session: agent, Device: d.ID}
	ev, err := audit.EventOf(write, req, audit.OK)
	if err != nil {
		// The device API forwards only the registry's writes: this is a bug,
		// and the line is not invented as another write.
		a.Logger.Error("a write the audit log has no event for; not recorded", "err", err, "agent", agent, "device", d.ID)
		return outcome{log: a.Logger, who: who}
	}
	p, err := a.Log.Begin(who, ev)
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
// "failed". A write Begin could not make an event for has nothing to end
// (Begin logged why).
func (o outcome) End(result, reason string) {
	if o.p == nil {
		return
	}
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
	ev, err := audit.EventOf(r.Write, r.Req, audit.Refused(reason))
	if err != nil {
		a.Logger.Error("a refused write the audit log has no event for; not recorded", "err", err, "agent", r.Agent, "device", r.Device, "count", r.Count)
		return
	}
	if _, err := a.Log.Record(audit.Who{Session: r.Agent, Device: r.Device}, audit.Counted(ev, r.Count)); err != nil {
		a.Logger.Error("could not write a refused write to the audit log", "err", err, "agent", r.Agent, "device", r.Device, "count", r.Count)
	}
}

// Receipts implements device.Recorder (A6).
func (a Auditor) Receipts(device string, since time.Time) ([]audit.Receipt, error) {
	return a.Log.Receipts(device, since)
}

// Setting implements device.Recorder: a write of a device's own settings
// (turning notifications on or off), carried out or failed. Its line names
// the device and no session: it reached no durable agent.
func (a Auditor) Setting(d store.Device, ev audit.Event) {
	if _, err := a.Log.Record(audit.Who{Device: d.ID}, ev); err != nil {
		a.Logger.Error("could not write a device's change of its settings to the audit log; the change itself went ahead", "err", err, "device", d.ID, "event", ev.Name())
	}
}
