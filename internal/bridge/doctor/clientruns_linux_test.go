//go:build linux

package doctor

import (
	"os"
	"slices"
	"testing"
)

// TestProcsFromSystem: the real process list has this test with its
// parent and its command line.
func TestProcsFromSystem(t *testing.T) {
	procs, err := procsFromSystem()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(procs, func(p Proc) bool { return p.PID == os.Getpid() })
	if i < 0 {
		t.Fatalf("pid %d is not among %d processes", os.Getpid(), len(procs))
	}
	if p := procs[i]; p.PPID != os.Getppid() || !slices.Equal(p.Argv, os.Args) {
		t.Errorf("%+v, want ppid %d and argv %q", p, os.Getppid(), os.Args)
	}
}
