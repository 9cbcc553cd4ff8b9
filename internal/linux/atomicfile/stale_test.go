package atomicfile

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestHelperSave is not a test: TestRemoveStale runs the test binary with
// ATOMICFILE_HELPER set to a path, and this saves to it, stopping halfway
// through the write until it is killed.
func TestHelperSave(t *testing.T) {
	path := os.Getenv("ATOMICFILE_HELPER")
	if path == "" {
		t.Skip("a helper process of TestRemoveStale")
	}
	WriteWith(path, []byte(`{"token":"s3cret"}`), func(w io.Writer, b []byte) error {
		w.Write(b)
		os.Stdout.WriteString("saving\n")
		select {} // until killed
	})
}

// startSave runs a process that saves path and stops halfway; it returns
// once the temporary file is written.
func startSave(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperSave$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_HELPER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "saving\n" {
		t.Fatalf("the saving process said %q, %v", line, err)
	}
	return cmd
}

func temps(t *testing.T, path string) []string {
	t.Helper()
	des, _ := os.ReadDir(filepath.Dir(path))
	var out []string
	for _, de := range des {
		if isTemp(path, de.Name()) {
			out = append(out, filepath.Join(filepath.Dir(path), de.Name()))
		}
	}
	return out
}

// age makes files look written an hour ago, so only the lock protects
// them.
func age(paths []string) {
	old := time.Now().Add(-time.Hour)
	for _, p := range paths {
		os.Chtimes(p, old, old)
	}
}

// TestRemoveStale: a save killed with SIGKILL mid-write leaves its
// temporary file (which can hold a token, K5); RemoveStale removes it,
// and leaves alone a save still in progress, files of other names and
// the file itself.
func TestRemoveStale(t *testing.T) {
	setup := func(t *testing.T) (dir, path, other string) {
		dir = t.TempDir()
		path = filepath.Join(dir, "sources.json")
		if err := Write(path, []byte(`{"old":true}`)); err != nil {
			t.Fatal(err)
		}
		other = filepath.Join(dir, ".devices.json.123.tmp")
		os.WriteFile(other, []byte("x"), 0o600)
		age([]string{other})
		return dir, path, other
	}

	t.Run("K5_save_in_progress_kept", func(t *testing.T) {
		_, path, _ := setup(t)
		startSave(t, path)
		live := temps(t, path)
		if len(live) != 1 {
			t.Fatalf("temporary files %v, want one", live)
		}
		age(live)
		if removed, err := RemoveStale(path); err != nil || len(removed) != 0 {
			t.Errorf("RemoveStale during a save = %v, %v; want nothing removed", removed, err)
		}
	})

	t.Run("K5_killed_save_removed", func(t *testing.T) {
		_, path, other := setup(t)
		cmd := startSave(t, path)
		cmd.Process.Kill() // SIGKILL
		cmd.Wait()
		left := temps(t, path)
		if len(left) == 0 {
			t.Fatal("the killed save left no temporary file; the test proves nothing")
		}
		if removed, _ := RemoveStale(path); len(removed) != 0 {
			t.Errorf("RemoveStale removed %v, younger than %v", removed, staleAfter)
		}
		age(left)
		removed, err := RemoveStale(path)
		if err != nil || !slices.Equal(removed, left) {
			t.Errorf("RemoveStale = %v, %v; want %v", removed, err, left)
		}
		if rest := temps(t, path); len(rest) != 0 {
			t.Errorf("left behind: %v", rest)
		}
		if b, _ := os.ReadFile(path); string(b) != `{"old":true}` {
			t.Errorf("the file itself holds %q", b)
		}
		if _, err := os.Stat(other); err != nil {
			t.Errorf("another file's temp was removed: %v", err)
		}
	})

	t.Run("missing_folder", func(t *testing.T) {
		dir, _, _ := setup(t)
		if removed, err := RemoveStale(filepath.Join(dir, "none", "x.json")); err != nil || removed != nil {
			t.Errorf("RemoveStale(missing) = %v, %v", removed, err)
		}
	})
}
