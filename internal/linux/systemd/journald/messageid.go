package journald

import "log/slog"

// Stable MESSAGE_IDs (128-bit, as systemd-id128 new prints them) for the
// few events an administrator searches for, across versions and
// languages:
//
//	journalctl --user -u collie MESSAGE_ID=0b3c...
//
// Never change one: scripts and alerts match on them. A new event gets a
// new id from `systemd-id128 new`.
const (
	// MsgDaemonStarted: the bridge is ready and serving (after READY=1).
	MsgDaemonStarted = "cd4284aee906475f80b79174813397da"
	// MsgAgentUnreachable: an attached durable agent cannot be read; the
	// entry's REASON field is the exact T3/T4 reason.
	MsgAgentUnreachable = "d1dad183609b4729af8faf0f68550984"
	// MsgAgentReachable: an attached durable agent is read again (or for
	// the first time).
	MsgAgentReachable = "232fead0ea744654b47e2e868b1e5d98"
	// MsgSourcesTightened: sources.json was readable by group or others
	// and was set to 0600 at start-up (K5).
	MsgSourcesTightened = "03b61e6a3fd749b6bff84a1410157d87"
	// MsgControlRefused: a process of another user connected to the
	// control socket and was refused (L3).
	MsgControlRefused = "4e69556be5b4411c82de794eb408010c"
	// MsgAuditAnchor: the audit log's chain head, written every few
	// records and at shutdown (AUDIT_DIR, AUDIT_HEAD, AUDIT_TIME); collie
	// audit verify checks the log against these entries (A1).
	MsgAuditAnchor = "bac765b235004b0fa36d0839366edb70"
)

// MessageID is the attribute that sets an entry's MESSAGE_ID field. In
// text output (outside the journal) it shows as MESSAGE_ID=<id>.
func MessageID(id string) slog.Attr { return slog.String("MESSAGE_ID", id) }
