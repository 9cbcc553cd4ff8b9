package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/protocol/wire"
)

func answer(id string) Answer {
	return Answer{RequestID: id, Question: "q-1", Revision: 1, Answered: OptionIDs(wire.Yes), Result: OK}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestModes(t *testing.T) {
	t.Run("A1_new_files_are_0600_in_a_0700_folder", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		record(t, l, who, answer("r-1"))
		if m := mode(t, l.opts.Dir); m != 0o700 {
			t.Errorf("state folder mode %04o, want 0700", m)
		}
		for _, name := range []string{LogName, ReceiptsName, lockName} {
			if m := mode(t, filepath.Join(l.opts.Dir, name)); m != 0o600 {
				t.Errorf("%s mode %04o, want 0600", name, m)
			}
		}
	})

	t.Run("A1_open_tightens_a_more_open_file_and_says_so", func(t *testing.T) {
		dir := t.TempDir()
		for name, m := range map[string]fs.FileMode{LogName: 0o644, ReceiptsName: 0o666, rotatedName(time.Unix(0, 0)): 0o640} {
			if err := os.WriteFile(filepath.Join(dir, name), nil, m); err != nil {
				t.Fatal(err)
			}
			os.Chmod(filepath.Join(dir, name), m) // past the umask
		}
		l, op, err := Open(Options{Dir: dir, NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		got := map[string]fs.FileMode{}
		for _, tg := range op.Tightened {
			got[filepath.Base(tg.Path)] = tg.Was
		}
		want := map[string]fs.FileMode{LogName: 0o644, ReceiptsName: 0o666, rotatedName(time.Unix(0, 0)): 0o640}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Opened.Tightened = %v, want %v", got, want)
		}
		for name := range want {
			if m := mode(t, filepath.Join(dir, name)); m != 0o600 {
				t.Errorf("%s mode %04o after Open, want 0600", name, m)
			}
		}
		l.Close()
		_, op, err = Open(Options{Dir: dir, NoSync: true})
		if err != nil || len(op.Tightened) != 0 {
			t.Errorf("second Open: Tightened = %v, %v; want nothing to tighten", op.Tightened, err)
		}
	})

	t.Run("A1_symlink_refused", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "elsewhere.log")
		os.WriteFile(target, nil, 0o600)
		if err := os.Symlink(target, filepath.Join(dir, LogName)); err != nil {
			t.Fatal(err)
		}
		_, _, err := Open(Options{Dir: dir, NoSync: true})
		if err == nil || !strings.Contains(err.Error(), "symbolic link; remove it") {
			t.Errorf("Open(symlinked log) = %v; want a refusal that says to remove the link", err)
		}
	})
}

// TestConcurrent checks that appends from many goroutines, and from two
// Logs on one folder as two processes would be, give whole lines and one
// valid chain.
func TestConcurrent(t *testing.T) {
	t.Run("A5_50_goroutines_50_whole_lines", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state")
		l, _, err := Open(Options{Dir: dir}) // fsync on: concurrent Records share rounds
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Go(func() {
				if _, err := l.Record(who, SendOf(wire.SendRequest{Header: wire.Header{RequestID: fmt.Sprintf("r-%d", i)}, Conversation: "c-1", Text: strings.Repeat("x", 100+i)}, OK)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		ls := lines(t, dir)
		if len(ls) != 50 {
			t.Fatalf("%d lines, want 50", len(ls))
		}
		seen := map[string]bool{}
		for _, line := range ls {
			r, err := ParseLine(line)
			if err != nil {
				t.Fatalf("a line is not whole: %v\n%s", err, line)
			}
			seen[r.Get("requestId").(string)] = true
		}
		if len(seen) != 50 {
			t.Errorf("%d distinct request ids, want 50", len(seen))
		}
		rep, err := Verify(dir)
		if err != nil || !rep.Intact() || rep.Records != 50 {
			t.Errorf("Verify = %+v, %v; want 50 intact records", rep, err)
		}
		rs, _ := l.Receipts(who.Device, time.Time{})
		if len(rs) != 50 {
			t.Errorf("%d receipts, want 50", len(rs))
		}
	})

	t.Run("A5_two_writers_one_chain", func(t *testing.T) {
		dir := t.TempDir()
		a, _ := openLog(t, Options{Dir: dir})
		b, _ := openLog(t, Options{Dir: dir, MaxBytes: 4 << 10}) // b rotates; a must follow
		var wg sync.WaitGroup
		for i := range 40 {
			l := a
			if i%2 == 1 {
				l = b
			}
			wg.Go(func() {
				if _, err := l.Record(who, answer(fmt.Sprintf("r-%d", i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		rep, err := Verify(dir)
		if err != nil || !rep.Intact() || rep.Records != 40 {
			t.Errorf("Verify = %+v, %v; want 40 intact records in one chain", rep, err)
		}
		if len(rep.Files) < 2 {
			t.Errorf("%d files; the test wants rotation by the other writer", len(rep.Files))
		}
		// Each sees the other's receipts.
		if _, err := a.Receipt(who.Device, "r-1"); err != nil {
			t.Errorf("a.Receipt(b's request) = %v", err)
		}
	})
}

// TestTorn checks the recovery from a write cut short by a crash: Open
// cuts the torn bytes off (or adds a whole record's missing newline, or
// ends a line of junk and keeps it), says so in Opened.Repaired, and the
// next line chains to the last whole record, so the log verifies intact
// with no fragment left in it.
func TestTorn(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cutBytes int64  // cut off the end of the log
		add      string // then appended
		torn     int    // torn writes Verify reports before recovery
		records  int    // after recovery and one more record
		repair   string // in the one Repair
		problem  int    // the line Verify names after recovery, 0 for intact
	}{
		{"A5_torn_line_cut_off", 40, "", 1, 3, "cut off 206 bytes of a write cut short", 0},
		{"A5_only_newline_lost", 1, "", 0, 4, "lacked its newline (its write stopped one byte short); added it", 0},
		{"A5_torn_fragment_cut_off", 0, `{"ti`, 1, 4, `cut off 4 bytes of a write cut short (a crash or a full disk): "{\"ti"`, 0},
		{"A5_nul_tail_cut_off", 0, "\x00\x00\x00\x00", 1, 4, "cut off 4 bytes", 0},
		{"A5_junk_tail_kept_as_evidence", 0, "junk", 0, 4, "not an audit record and not a torn write: kept", 4},
		{"A5_junk_last_line_named", 0, "junk\n", 0, 4, "the last line is not an audit record", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openLog(t, Options{Dir: dir})
			for i := range 3 {
				record(t, l, who, answer(fmt.Sprintf("r-%d", i)))
			}
			l.Close()
			path := filepath.Join(dir, LogName)
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()-tc.cutBytes); err != nil {
				t.Fatal(err)
			}
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(tc.add)
			f.Close()
			if before, _ := Verify(dir); len(before.Torn) != tc.torn {
				t.Errorf("before recovery: Verify = %+v; want %d torn", before, tc.torn)
			}
			l, op, err := Open(Options{Dir: dir, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if len(op.Repaired) != 1 || !strings.Contains(op.Repaired[0].What, tc.repair) {
				t.Errorf("Opened.Repaired = %v, want one: ...%s...", op.Repaired, tc.repair)
			}
			record(t, l, who, answer("r-after"))
			rep, err := Verify(dir)
			if err != nil || rep.Records != tc.records || len(rep.Torn) != 0 {
				t.Errorf("after recovery: Verify = %+v, %v; want %d records, none torn", rep, err, tc.records)
			}
			switch {
			case tc.problem == 0 && !rep.Intact():
				t.Errorf("after recovery: %v; want intact", rep.Problems)
			case tc.problem != 0 && (len(rep.Problems) != 1 || rep.Problems[0].Line != tc.problem):
				t.Errorf("after recovery: %v; want only line %d named", rep.Problems, tc.problem)
			}
			data, _ := os.ReadFile(path)
			if bytes.Contains(data, []byte("\x00")) || !bytes.HasSuffix(data, []byte("}\n")) {
				t.Errorf("the log keeps a fragment:\n%q", data)
			}
		})
	}
}

// TestRotation checks size-based rotation: the new file's first line
// chains to the old file's last record, Verify follows the chain across
// files, and only KeepRotated old files stay.
func TestRotation(t *testing.T) {
	t.Run("A1_rotation_keeps_the_chain", func(t *testing.T) {
		dir := t.TempDir()
		l, c := openLog(t, Options{Dir: dir, MaxBytes: 1 << 10, KeepRotated: 100})
		for i := range 30 {
			record(t, l, who, answer(fmt.Sprintf("r-%d", i)))
			c.Add(time.Second)
		}
		files, _ := Files(dir)
		if len(files) < 5 {
			t.Fatalf("%d files, want rotation at 1 KiB", len(files))
		}
		for _, f := range files {
			if fi, _ := os.Stat(f); fi.Size() > 1<<10 {
				t.Errorf("%s has %d bytes, over MaxBytes", f, fi.Size())
			}
		}
		rep, err := Verify(dir)
		if err != nil || !rep.Intact() || rep.Records != 30 || rep.ContinuesFrom != "" || rep.Head != l.Head() {
			t.Errorf("Verify = %+v, %v; want 30 intact records from the genesis to the head %s", rep, err, l.Head())
		}
		// The current file alone does not start the chain.
		rep, _ = VerifyFiles(filepath.Join(dir, LogName))
		if rep.Intact() || !strings.Contains(rep.Problems[0].What, "does not start the chain") {
			t.Errorf("VerifyFiles(audit.log alone) = %+v; want the first record flagged", rep)
		}
		// A rotated file removed from the middle breaks it.
		os.Remove(files[2])
		rep, _ = Verify(dir)
		if rep.Intact() || filepath.Base(rep.Problems[0].File) != filepath.Base(files[3]) || rep.Problems[0].Line != 1 {
			t.Errorf("Verify without %s = %+v; want line 1 of the next file flagged", files[2], rep.Problems)
		}
	})

	t.Run("A1_rotation_keeps_KeepRotated_files", func(t *testing.T) {
		dir := t.TempDir()
		l, c := openLog(t, Options{Dir: dir, MaxBytes: 1 << 10, KeepRotated: 2})
		for i := range 30 {
			record(t, l, who, answer(fmt.Sprintf("r-%d", i)))
			c.Add(time.Second)
		}
		files, _ := Files(dir)
		if len(files) != 3 {
			t.Errorf("%d files, want 2 rotated and audit.log", len(files))
		}
		rep, err := Verify(dir)
		if err != nil || !rep.Intact() || rep.ContinuesFrom == "" {
			t.Errorf("Verify = %+v, %v; want intact, continuing from a removed file", rep, err)
		}
	})

	t.Run("A1_log_removed_while_open_is_detected", func(t *testing.T) {
		dir := t.TempDir()
		l, _ := openLog(t, Options{Dir: dir})
		record(t, l, who, answer("r-1"))
		record(t, l, who, answer("r-2"))
		os.Remove(filepath.Join(dir, LogName))
		record(t, l, who, answer("r-3"))
		rep, _ := Verify(dir)
		if rep.Intact() || rep.Problems[0].Line != 1 {
			t.Errorf("Verify = %+v; want line 1 flagged: the lines before it are gone", rep)
		}
	})
}

// TestSync checks A5 with fsync on: a Record waits for its line to reach
// the disk, but never longer than SyncWait, and an fsync error reaches
// the caller.
func TestSync(t *testing.T) {
	t.Run("A5_slow_disk_blocks_at_most_SyncWait", func(t *testing.T) {
		release := make(chan struct{})
		l, _, err := Open(Options{Dir: t.TempDir(), SyncWait: 50 * time.Millisecond,
			syncFile: func(*os.File) error { <-release; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for i := range 3 {
			if _, err := l.Record(who, answer(fmt.Sprintf("r-%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("3 Records on a stuck disk took %v; each should wait at most 50ms", d)
		}
		if n := len(lines(t, l.opts.Dir)); n != 3 {
			t.Errorf("%d lines written, want 3", n)
		}
		close(release) // the disk wakes up
		if err := l.Close(); err != nil {
			t.Error(err)
		}
	})

	t.Run("A5_fsync_error_is_returned", func(t *testing.T) {
		l, _, err := Open(Options{Dir: t.TempDir(), syncFile: func(*os.File) error { return errors.New("EIO") }})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		_, err = l.Record(who, answer("r-1"))
		if err == nil || !strings.Contains(err.Error(), "fsync failed: EIO") {
			t.Errorf("Record = %v; want the fsync error", err)
		}
	})

	t.Run("A5_closed_log_refuses", func(t *testing.T) {
		l, _ := openLog(t, Options{})
		l.Close()
		if _, err := l.Record(who, answer("r-1")); !errors.Is(err, ErrClosed) {
			t.Errorf("Record after Close = %v, want ErrClosed", err)
		}
	})
}
