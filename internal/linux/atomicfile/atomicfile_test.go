package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.json")
	if err := Write(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("folder mode = %v, want 0700", di.Mode().Perm())
	}
	// A write that fails halfway leaves the old file whole and no temp file.
	err = WriteWith(path, []byte("two, longer"), func(w io.Writer, b []byte) error {
		w.Write(b[:3])
		return errors.New("disk full")
	})
	if err == nil {
		t.Fatal("a failed write reported success")
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Fatalf("after a failed write the file holds %q", b)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("a temp file was left behind: %v", ents)
	}
}
