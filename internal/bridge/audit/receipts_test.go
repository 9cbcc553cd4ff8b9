package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func receiptLines(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ReceiptsName))
	if err != nil {
		t.Fatal(err)
	}
	return len(splitLines(data))
}

// TestReceipts checks A6: a receipt for each of the five taps and for
// nothing else, without typed text, that points at its line of the log.
func TestReceipts(t *testing.T) {
	t.Run("A6_one_receipt_per_tap", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		var withReceipt []string
		for _, tc := range eventCases {
			rc := record(t, l, who, tc.ev)
			if tap(tc.ev) {
				withReceipt = append(withReceipt, tc.name)
				if rc.ID == "" || rc.Event != tc.ev.Name() || rc.RequestID != requestID(tc.ev) || rc.Result != tc.ev.result().Status() {
					t.Errorf("%s: receipt %+v", tc.name, rc)
				}
			} else if rc != (Receipt{}) {
				t.Errorf("%s: a receipt %+v for an event A6 gives none", tc.name, rc)
			}
		}
		rs, err := l.Receipts(who.Device, time.Time{})
		if err != nil || len(rs) != len(withReceipt) {
			t.Errorf("Receipts = %d, %v; want %d (%v)", len(rs), err, len(withReceipt), withReceipt)
		}
		data, _ := os.ReadFile(filepath.Join(l.opts.Dir, ReceiptsName))
		for _, secret := range []string{"hunter2", "Alice", "aaaa"} {
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("the receipts hold typed text %q", secret)
			}
		}
	})

	t.Run("A6_receipt_id_is_the_hash_of_its_line", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		rc := record(t, l, who, answer("r-1"))
		record(t, l, who, answer("r-2"))
		ls := lines(t, l.opts.Dir)
		next, _ := ParseLine(ls[1])
		if rc.ID != hashLine(ls[0]) || next.Prev != rc.ID {
			t.Errorf("receipt id %s; line 1 hashes to %s, line 2's prev is %s", rc.ID, hashLine(ls[0]), next.Prev)
		}
		if !rc.Time.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("receipt time %v", rc.Time)
		}
	})

	t.Run("A6_lookup_is_per_device", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		other := Who{Session: who.Session, Device: "dev-other"}
		mine := record(t, l, who, answer("r-same"))
		record(t, l, other, AbortOf(wire.AbortRequest{Header: wire.Header{RequestID: "r-same"}, Conversation: "c"}, OK))
		got, err := l.Receipt(who.Device, "r-same")
		if err != nil || got != mine {
			t.Errorf("Receipt(mine) = %+v, %v; want %+v", got, err, mine)
		}
		if _, err := l.Receipt("dev-unknown", "r-same"); !errors.Is(err, ErrNoReceipt) {
			t.Errorf("Receipt(another device) = %v, want ErrNoReceipt", err)
		}
		if rs, _ := l.Receipts(other.Device, time.Time{}); len(rs) != 1 || rs[0].Event != EventAbort {
			t.Errorf("Receipts(other) = %+v", rs)
		}
		if rs, _ := l.Receipts("", time.Time{}); len(rs) != 2 {
			t.Errorf("Receipts(every device) = %d, want 2", len(rs))
		}
	})

	t.Run("A6_receipts_survive_a_restart", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openLog(t, Options{Dir: dir})
		want := record(t, l, who, answer("r-1"))
		l.Close()
		l, _ = openLog(t, Options{Dir: dir})
		got, err := l.Receipt(who.Device, "r-1")
		if err != nil || got != want {
			t.Errorf("after reopening: Receipt = %+v, %v; want %+v", got, err, want)
		}
	})

	t.Run("A6_since_filters", func(t *testing.T) {
		l, c := openLog(t, Options{})
		record(t, l, who, answer("r-1"))
		c.Add(time.Hour)
		since := c.Now()
		record(t, l, who, answer("r-2"))
		rs, _ := l.Receipts(who.Device, since)
		if len(rs) != 1 || rs[0].RequestID != "r-2" {
			t.Errorf("Receipts(since) = %+v, want only r-2", rs)
		}
	})

	t.Run("A6_receipts_lost_in_a_crash_are_recovered_from_the_log", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openLog(t, Options{Dir: dir})
		first := record(t, l, who, answer("r-1"))
		record(t, l, who, PaneClose{Conversation: "c-1"})
		lost := record(t, l, who, SendOf(wire.SendRequest{Header: wire.Header{RequestID: "r-2"}, Conversation: "c-1", Text: "hi"}, Refused("busy")))
		l.Close()
		// The crash: the send's line is on disk, its receipt is not.
		path := filepath.Join(dir, ReceiptsName)
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:bytes.IndexByte(data, '\n')+1], 0o600)
		l, op, err := Open(Options{Dir: dir, NoSync: true, Now: newClock().Now})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if op.Recovered != 1 {
			t.Errorf("Opened.Recovered = %d, want 1", op.Recovered)
		}
		rs, _ := l.Receipts(who.Device, time.Time{})
		if len(rs) != 2 || rs[0] != first || rs[1] != lost {
			t.Errorf("Receipts after recovery = %+v, want %+v and %+v", rs, first, lost)
		}
		l.Close()
		// Every receipt gone: those of the log's taps come back.
		os.Remove(path)
		l, op, err = Open(Options{Dir: dir, NoSync: true, Now: newClock().Now})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if op.Recovered != 2 {
			t.Errorf("Opened.Recovered = %d after the file was removed, want 2", op.Recovered)
		}
	})

	t.Run("A6_unreadable_receipt_lines_are_dropped", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openLog(t, Options{Dir: dir})
		record(t, l, who, answer("r-1"))
		l.Close()
		f, _ := os.OpenFile(filepath.Join(dir, ReceiptsName), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("{not a receipt}\n{\"id\":")
		f.Close()
		l, op, err := Open(Options{Dir: dir, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if op.BadReceipts != 2 || op.Pruned != 2 {
			t.Errorf("Opened = %+v, want 2 bad lines pruned", op)
		}
		if n := receiptLines(t, dir); n != 1 {
			t.Errorf("%d receipt lines after Open, want 1", n)
		}
	})
}

// TestRetention checks A6's retention with a clock the test moves: at
// most 30 days (MaxAge) and the newest MaxCount, enforced on every read,
// pruned from the file at Open, daily and when it grows a tenth past
// MaxCount.
func TestRetention(t *testing.T) {
	t.Run("A6_older_than_MaxAge_never_returned_and_pruned_daily", func(t *testing.T) {
		dir := t.TempDir()
		l, c := openLog(t, Options{Dir: dir})
		record(t, l, who, answer("r-old"))
		c.Add(29 * 24 * time.Hour)
		record(t, l, who, answer("r-new"))
		c.Add(2 * 24 * time.Hour) // r-old is 31 days old, r-new 2
		if _, err := l.Receipt(who.Device, "r-old"); !errors.Is(err, ErrNoReceipt) {
			t.Errorf("Receipt(31 days old) = %v, want ErrNoReceipt", err)
		}
		if rs, _ := l.Receipts(who.Device, time.Time{}); len(rs) != 1 || rs[0].RequestID != "r-new" {
			t.Errorf("Receipts = %+v, want only r-new", rs)
		}
		if n := receiptLines(t, dir); n != 2 {
			t.Errorf("%d lines before the daily prune, want 2 (reads do not rewrite)", n)
		}
		l.pruneTick() // what the timer runs; a day has passed by the Log's clock
		if n := receiptLines(t, dir); n != 1 {
			t.Errorf("%d lines after the daily prune, want 1", n)
		}
		if m := mode(t, filepath.Join(dir, ReceiptsName)); m != 0o600 {
			t.Errorf("the rewritten file has mode %04o, want 0600", m)
		}
		record(t, l, who, answer("r-later")) // appends go to the new file
		if n := receiptLines(t, dir); n != 2 {
			t.Errorf("%d lines after one more tap, want 2", n)
		}
	})

	t.Run("A6_prune_runs_only_once_a_day", func(t *testing.T) {
		dir := t.TempDir()
		l, c := openLog(t, Options{Dir: dir, Retention: Retention{MaxAge: time.Hour}})
		record(t, l, who, answer("r-1"))
		c.Add(2 * time.Hour)
		l.pruneTick() // 2 hours since Open's prune: not yet
		if n := receiptLines(t, dir); n != 1 {
			t.Errorf("%d lines, want 1: the file is pruned once a day", n)
		}
		c.Add(22 * time.Hour)
		l.pruneTick()
		if n := receiptLines(t, dir); n != 0 {
			t.Errorf("%d lines a day after Open, want 0", n)
		}
	})

	t.Run("A6_open_prunes", func(t *testing.T) {
		dir := t.TempDir()
		l, c := openLog(t, Options{Dir: dir})
		record(t, l, who, answer("r-1"))
		record(t, l, who, answer("r-2"))
		l.Close()
		c.Add(31 * 24 * time.Hour)
		l, op, err := Open(Options{Dir: dir, NoSync: true, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if op.Pruned != 2 || receiptLines(t, dir) != 0 {
			t.Errorf("Opened.Pruned = %d, %d lines left; want 2 and 0", op.Pruned, receiptLines(t, dir))
		}
	})

	t.Run("A6_newest_MaxCount_kept", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openLog(t, Options{Dir: dir, Retention: Retention{MaxCount: 10}})
		for i := range 25 {
			record(t, l, who, answer(fmt.Sprintf("r-%d", i)))
		}
		rs, _ := l.Receipts(who.Device, time.Time{})
		if len(rs) != 10 || rs[0].RequestID != "r-15" || rs[9].RequestID != "r-24" {
			t.Errorf("Receipts = %d from %s, want the newest 10 (r-15 to r-24)", len(rs), rs[0].RequestID)
		}
		if n := receiptLines(t, dir); n > 15 {
			t.Errorf("%d lines in the file, want at most 15 (half again MaxCount)", n)
		}
		if n, err := l.Prune(); err != nil || receiptLines(t, dir) != 10 {
			t.Errorf("Prune = %d, %v; %d lines left, want 10", n, err, receiptLines(t, dir))
		}
	})
}
