package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/linux/systemd/journald"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
)

// TestAuditAnchorsInJournal: the daemon, a user service under a real
// systemd and journald, writes the audit chain's head to the journal when
// it stops; collie audit verify finds the log intact against it, and a
// log whose last record was then removed fails against the journal's
// anchor, though its own chain is whole (A1).
func TestAuditAnchorsInJournal(t *testing.T) {
	r := startBridge(t, 2*time.Minute, demoBridge())
	um, ctx, must, collie := r.um, r.ctx, r.must, r.run
	dev, _ := r.pair("e2e phone")
	var st device.State
	waitFor(t, loadGuard, "the demo question over the device API", func() bool {
		dev.call("GET", "/api/v1/state", "", nil, &st)
		return len(st.Agents) == 1 && st.Agents[0].Snapshot != nil && len(questions(st)) == 1
	})
	q := questions(st)[0]
	gate := map[string]string{device.WriteHeader: "1"}
	// A refusal, then the answer: three records (the answer's intent and
	// its outcome).
	for i, rev := range []int64{q.Revision + 7, q.Revision} {
		b, _ := json.Marshal(map[string]any{"requestId": "a" + string(rune('0'+i)), "conversation": "main", "question": q.ID, "revision": rev, "optionIds": []string{"yes"}})
		dev.call("POST", "/api/v1/agents/demo/answer", string(b), gate, nil)
	}
	// Stopping the daemon anchors the head.
	must(um.Systemctl(ctx, "stop", "collie.service"))
	if _, err := um.WaitJournal(ctx, func(e systemdtest.JournalEntry) bool { return len(e["AUDIT_HEAD"]) == 64 },
		"MESSAGE_ID="+journald.MsgAuditAnchor); err != nil {
		t.Fatal(err)
	}
	out := must(collie("audit", "verify"))
	if !strings.Contains(out, "intact: 3 records") || !strings.Contains(out, "anchors: 1 in the journal, 1 found in the log; 0 records after the newest") {
		t.Fatalf("collie audit verify of the log as written:\n%s", out)
	}

	// Remove the last record: the chain of what is left is whole, but the
	// journal's anchor names the record removed.
	log := filepath.Join(um.Home, ".local/state/collie/audit.log")
	must(um.Run(ctx, "/bin/sh", "-c", `head -n 1 "$1" > "$1.new" && mv "$1.new" "$1"`, "sh", log))
	out, err := collie("audit", "verify")
	if err == nil || !strings.Contains(out, "the journal anchors a record of") || !strings.Contains(out, "records were removed from its end") {
		t.Fatalf("collie audit verify of a truncated log: %v\n%s", err, out)
	}
	if !strings.Contains(out, "intact: 1 records") && !strings.Contains(out, "tampered: 1 records") {
		t.Errorf("the report lacks the record count:\n%s", out)
	}
}
