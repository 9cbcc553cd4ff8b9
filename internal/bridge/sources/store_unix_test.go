//go:build unix

package sources

import (
	"path/filepath"
	"syscall"
	"testing"
)

// The umask is per process: this test must not run in parallel.
func TestSaveModeWithUmaskZero(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "collie")
	path := filepath.Join(dir, "sources.json")
	if err := Save(path, File{Sources: []Source{{Name: "cloud", URL: "https://a", Token: token}}}); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, dir, 0o700)
	if err := Update(path, func(f *File) error { return f.Remove("cloud") }); err != nil {
		t.Fatal(err)
	}
	assertMode(t, path, 0o600)
	assertMode(t, path+".lock", 0o600)
}
