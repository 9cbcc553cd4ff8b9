package audit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

// TestRecoveredReceiptsAfterACrash_A5_A6: a daemon killed while a write
// waits on the agent leaves its pending line without an outcome. When the
// daemon starts again, the receipt it files for that write says
// "unknown" (the agent may or may not have carried it out), never
// "pending"; a write whose outcome is in the log has that outcome's
// receipt only; and a later start files nothing twice.
func TestRecoveredReceiptsAfterACrash_A5_A6(t *testing.T) {
	send := func(id string) Event {
		return SendOf(wire.SendRequest{Header: wire.Header{RequestID: id}, Conversation: "c-1", Text: "hi"}, Result{})
	}
	begin := func(t *testing.T, l *Log, id string) *Pending {
		t.Helper()
		p, err := l.Begin(who, send(id))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	end := func(t *testing.T, p *Pending, r Result) {
		t.Helper()
		if _, err := p.End(r); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		// crash writes what the daemon wrote before it was killed.
		crash func(t *testing.T, l *Log)
		// lostReceipts: the receipts file lost its end as well (a crash
		// between a line and its receipt), or all of it.
		lostReceipts bool
		want         map[string]string // request id → the receipt's result
	}{
		{"the_last_write_waits_on_the_agent", func(t *testing.T, l *Log) {
			record(t, l, who, answer("r-0"))
			begin(t, l, "r-1")
		}, false, map[string]string{"r-0": StatusOK, "r-1": "unknown"}},
		{"a_tap_after_the_cut_write", func(t *testing.T, l *Log) {
			begin(t, l, "r-1")
			record(t, l, who, answer("r-2"))
		}, false, map[string]string{"r-1": "unknown", "r-2": StatusOK}},
		{"two_in_flight_one_ended", func(t *testing.T, l *Log) {
			p1 := begin(t, l, "r-1")
			p2 := begin(t, l, "r-2")
			end(t, p2, Refused("busy"))
			_ = p1
		}, false, map[string]string{"r-1": "unknown", "r-2": StatusRefused}},
		{"ended_but_its_receipt_lost", func(t *testing.T, l *Log) {
			end(t, begin(t, l, "r-1"), OK)
		}, true, map[string]string{"r-1": StatusOK}},
		{"cut_and_every_receipt_lost", func(t *testing.T, l *Log) {
			end(t, begin(t, l, "r-1"), Failed("agent-gone"))
			begin(t, l, "r-2")
			record(t, l, who, answer("r-3"))
		}, true, map[string]string{"r-1": StatusFailed, "r-2": "unknown", "r-3": StatusOK}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			l, _ := openLog(t, Options{Dir: dir})
			tc.crash(t, l)
			l.Close() // writes nothing more: the log is as the kill left it
			if tc.lostReceipts {
				if err := os.WriteFile(filepath.Join(dir, ReceiptsName), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			l, _ = openLog(t, Options{Dir: dir})
			all, err := l.Receipts("", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range all {
				if _, twice := got[r.RequestID]; twice {
					t.Errorf("two receipts for %s: %+v", r.RequestID, all)
				}
				got[r.RequestID] = r.Result
			}
			if len(got) != len(tc.want) {
				t.Errorf("receipts %+v, want results %v", all, tc.want)
			}
			for id, want := range tc.want {
				r, err := l.Receipt(who.Device, id)
				if err != nil || r.Result != want {
					t.Errorf("Receipt(%s) = %+v, %v; want the result %q", id, r, err, want)
				}
			}
			n := receiptLines(t, dir)
			l.Close()
			// Another start files nothing again.
			l, op, err := Open(Options{Dir: dir, NoSync: true, Now: newClock().Now})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if op.Recovered != 0 || receiptLines(t, dir) != n {
				t.Errorf("a second start filed %d receipts (%d lines, was %d)", op.Recovered, receiptLines(t, dir), n)
			}
		})
	}
}

// TestReceiptOfACutWriteEndedLater_A6: should a write thought cut end
// after all (another process's write still in flight at Open), its
// outcome's receipt is the one a device gets.
func TestReceiptOfACutWriteEndedLater_A6(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, _ := openLog(t, Options{Dir: dir})
	p, err := l.Begin(who, SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-1"}, Conversation: "c-1", Text: "hi"}, Result{}))
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := openLog(t, Options{Dir: dir})
	if r, err := l2.Receipt(who.Device, "r-1"); err != nil || r.Result != "unknown" {
		t.Fatalf("Receipt = %+v, %v; want unknown", r, err)
	}
	if _, err := p.End(OK); err != nil {
		t.Fatal(err)
	}
	if r, err := l2.Receipt(who.Device, "r-1"); err != nil || r.Result != StatusOK {
		t.Fatalf("Receipt after the end = %+v, %v; want ok", r, err)
	}
	if _, err := l2.Receipt(who.Device, "r-2"); !errors.Is(err, ErrNoReceipt) {
		t.Fatalf("Receipt(r-2) = %v", err)
	}
}
