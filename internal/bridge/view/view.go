// Package view is the bridge's model of its durable agents as it shows
// them: the status of each attached agent and, once read and cleaned (X1),
// its snapshot. It is the contract of what leaves the bridge: the control
// socket sends it to the collie command (collie durable list, collie show)
// and the device API to a paired phone or browser, both as this JSON.
//
// It holds types only, so that the bridge, the control socket and the
// device API share one model without importing one another.
package view

import (
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// AgentStatus is one attached durable agent as the bridge sees it.
// HealthzBody is what the device API's /healthz answers, and what collie
// doctor expects to read there through public_url: one constant, so the
// two cannot drift apart.
const HealthzBody = "collie bridge ok\n"

type AgentStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`          // "socket" or "https"
	Target    string `json:"target"`             // socket path or URL; never a token
	TokenSet  bool   `json:"tokenSet,omitempty"` // a token is stored (K5: shown, never printed)
	Reachable bool   `json:"reachable"`
	Reason    string `json:"reason,omitempty"` // why not, exactly (T3, T4)
	// ReasonCode is Reason for programs: the socket walk's code
	// (sockpath.Code: "folder-mode", "no-socket", ...), "token-refused",
	// or "unreachable" for any other failure; "" while reachable.
	ReasonCode string    `json:"reasonCode,omitempty"`
	Agent      string    `json:"agent,omitempty"`  // the name the agent gives itself
	Checked    time.Time `json:"checked,omitzero"` // when the last poll began
	// Mode is how the bridge reads the agent: "waiting read"
	// (held at the agent until its state changes), "polled every 10 s"
	// (an agent without waiting reads, at the seed's cadence, K8),
	// "retried every 10 s" (down or refusing the token), and so on; ""
	// when the bridge does not read it (its settings are refused).
	Mode string `json:"mode,omitempty"`
}

// Agent is what the bridge holds of one agent: its status and, after
// cleaning, its snapshot.
type Agent struct {
	AgentStatus
	Snapshot *wire.Snapshot `json:"snapshot,omitempty"`
	// Lineage relates Snapshot to the agent's earlier ones (snapshot
	// deltas), so the device API need not compare what did not change.
	// Never sent.
	Lineage *wire.Lineage `json:"-"`
}
