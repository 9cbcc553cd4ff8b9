package audit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// TestFailedAppend checks that a write cut short (a full disk) leaves
// audit.log exactly as it was, so the next record chains to the last one
// on disk and the log verifies intact (A1, A5). The
// writer is injected: it writes part of the line, then fails.
func TestFailedAppend(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(line []byte) int // bytes written before the failure
	}{
		{"A5_fragment", func([]byte) int { return 7 }},
		{"A5_all_but_newline", func(line []byte) int { return len(line) - 1 }},
		{"A5_nothing", func([]byte) int { return 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			fail := false
			opts := Options{Dir: dir, writeFile: func(f *os.File, b []byte) (int, error) {
				if !fail {
					return f.Write(b)
				}
				n, _ := f.Write(b[:tc.keep(b)])
				return n, syscall.ENOSPC
			}}
			l, _ := openLog(t, opts)
			record(t, l, who, answer("r-1"))
			before, _ := os.ReadFile(filepath.Join(dir, LogName))
			fail = true
			if _, err := l.Record(who, answer("r-2")); err == nil || !strings.Contains(err.Error(), "nothing of the line was kept") {
				t.Fatalf("Record on a full disk = %v; want an error saying nothing was kept", err)
			}
			after, _ := os.ReadFile(filepath.Join(dir, LogName))
			if !bytes.Equal(before, after) {
				t.Fatalf("a failed append changed the log:\n%q\nwant\n%q", after, before)
			}
			fail = false
			record(t, l, who, answer("r-3"))
			if rep, err := Verify(dir); err != nil || !rep.Intact() || rep.Records != 2 || len(rep.Torn) != 0 {
				t.Errorf("Verify = %+v, %v; want 2 intact records", rep, err)
			}
		})
	}
}

// TestFullDisk fills a real file system (a small tmpfs the test mounts)
// until an append fails mid-line, and checks that the log is left whole
// and goes on intact once there is room again (A5).
func TestFullDisk(t *testing.T) {
	testenv.RequireRoot(t, "mount a small tmpfs; run the tests as root to check a real full disk")
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt).CombinedOutput(); err != nil {
		testenv.Unavailablef(t, "cannot mount a tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "state")
	l, _, err := Open(Options{Dir: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Fill the disk but for one page, so the log's own appends run it out
	// partway through a line.
	filler := filepath.Join(mnt, "filler")
	data := bytes.Repeat([]byte("x"), 4096)
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(data); err != nil {
			break
		}
	}
	f.Close()
	st, _ := os.Stat(filler)
	os.Truncate(filler, st.Size()-4096)
	var failed error
	written := 0
	for i := range 400 {
		_, err := l.Record(who, answer(fmt.Sprintf("r-%d", i)))
		if err != nil && strings.Contains(err.Error(), "was not recorded") {
			failed = err
			break
		}
		written++ // a receipt may have failed: the line is in
	}
	if failed == nil {
		t.Fatal("400 appends fit in a full tmpfs")
	}
	t.Logf("append %d failed: %v", written+1, failed)
	raw, _ := os.ReadFile(filepath.Join(dir, LogName))
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		t.Errorf("the log ends in a fragment after a failed append: %q", raw[max(0, len(raw)-80):])
	}
	rep, _ := Verify(dir)
	if !rep.Intact() || len(rep.Torn) != 0 || rep.Records != written {
		t.Errorf("after the failed append: Verify = %+v; want %d intact records, none torn", rep, written)
	}
	os.Remove(filler)
	record(t, l, who, answer("r-after"))
	rep, _ = Verify(dir)
	if !rep.Intact() || rep.Records != written+1 {
		t.Errorf("once there is room: Verify = %+v; want %d intact records", rep, written+1)
	}
}
