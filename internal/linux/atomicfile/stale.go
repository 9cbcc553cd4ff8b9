package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// staleAfter is how old a temporary file must be before RemoveStale
// takes it for a leftover: a save in progress holds its file's lock, and
// this covers the moment between creating the file and locking it, and
// between closing and renaming it.
const staleAfter = 2 * time.Second

// tempPattern is the name of path's temporary files, for os.CreateTemp.
func tempPattern(path string) string { return "." + filepath.Base(path) + ".*.tmp" }

// isTemp reports whether name is one of path's temporary files.
func isTemp(path, name string) bool {
	prefix, suffix, _ := strings.Cut(tempPattern(path), "*")
	return len(name) > len(prefix)+len(suffix) && strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix)
}

// RemoveStale removes the temporary files a save of path left behind
// when its process was killed before the rename (kill -9, a crash, a
// power cut): .NAME.*.tmp beside path. They may hold what path holds (a
// token). A file another process is still writing (it holds the file's
// lock, or it is younger than two seconds) is left alone. It returns the
// paths it removed, for a log line, and the first error met; call it
// where path is loaded.
func RemoveStale(path string) ([]string, error) {
	dir := filepath.Dir(path)
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look for temporary files of %s: %w", path, err)
	}
	var removed []string
	var first error
	for _, de := range des {
		if !isTemp(path, de.Name()) || !de.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, de.Name())
		ok, err := removeIfStale(p, time.Now())
		if ok {
			removed = append(removed, p)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("remove the leftover temporary file %s: %w; remove it by hand", p, err)
		}
	}
	return removed, first
}

// removeIfStale removes p unless it is young or a live process holds its
// lock.
func removeIfStale(p string, now time.Time) (bool, error) {
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < staleAfter {
		return false, nil
	}
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if !tryLock(f) {
		return false, nil // a save in progress
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
