package audit

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Names of the files in the state folder.
const (
	LogName      = "audit.log"      // the log (A1)
	ReceiptsName = "receipts.jsonl" // the receipts (A6)
	lockName     = "audit.lock"     // the flock that orders appends of every process
	stampLayout  = "20060102T150405.000Z"
)

// rotatedName is the name audit.log gets when it is rotated at t.
func rotatedName(t time.Time) string {
	return LogName + "." + t.UTC().Format(stampLayout)
}

// isRotated reports whether path names a rotated log:
// audit.log.<UTC time of rotation>, maybe with "-N" after it.
func isRotated(path string) bool {
	rest, ok := strings.CutPrefix(filepath.Base(path), LogName+".")
	if !ok {
		return false
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		rest = rest[:i]
	}
	_, err := time.Parse(stampLayout, rest)
	return err == nil
}

// Files lists the log's files in dir, oldest first: the rotated files,
// then audit.log when it exists.
func Files(dir string) ([]string, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the state folder: %w; run collie as the user whose log it is", err)
	}
	var rotated []string
	current := false
	for _, de := range des {
		switch {
		case de.Name() == LogName:
			current = true
		case isRotated(de.Name()):
			rotated = append(rotated, de.Name())
		}
	}
	slices.Sort(rotated) // the time in the name sorts them
	var paths []string
	for _, n := range rotated {
		paths = append(paths, filepath.Join(dir, n))
	}
	if current {
		paths = append(paths, filepath.Join(dir, LogName))
	}
	return paths, nil
}

// snapshot reads the log's files in dir as they are at one moment: it
// notes each file's size under a shared lock, which waits for an append
// in flight, and reads up to that size after letting go, so a long read
// never holds up a write.
func snapshot(dir string) ([]fileData, error) {
	lf, err := os.Open(filepath.Join(dir, lockName))
	if err == nil {
		defer lf.Close()
		unlock, err := flock(lf, false)
		if err != nil {
			return nil, fmt.Errorf("lock the audit log: %w", err)
		}
		defer func() {
			if unlock != nil {
				unlock()
			}
		}()
		files, sizes, err := openFiles(dir)
		unlock()
		unlock = nil
		if err != nil {
			return nil, err
		}
		return readSized(files, sizes)
	}
	files, sizes, err := openFiles(dir)
	if err != nil {
		return nil, err
	}
	return readSized(files, sizes)
}

func openFiles(dir string) ([]*os.File, []int64, error) {
	paths, err := Files(dir)
	if err != nil {
		return nil, nil, err
	}
	var files []*os.File
	var sizes []int64
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // rotated away or pruned between the listing and now
		}
		if err != nil {
			closeAll(files)
			return nil, nil, fmt.Errorf("open the audit log: %w; run collie as the user whose log it is", err)
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll(files)
			return nil, nil, fmt.Errorf("stat the audit log: %w", err)
		}
		files, sizes = append(files, f), append(sizes, fi.Size())
	}
	return files, sizes, nil
}

func readSized(files []*os.File, sizes []int64) ([]fileData, error) {
	defer closeAll(files)
	out := make([]fileData, 0, len(files))
	for i, f := range files {
		data := make([]byte, sizes[i])
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		out = append(out, fileData{f.Name(), data})
	}
	return out, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func readFiles(paths []string) ([]fileData, error) {
	out := make([]fileData, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read the audit log: %w; give a file that exists and that you can read", err)
		}
		out = append(out, fileData{p, data})
	}
	return out, nil
}

// Read calls fn with each record of the log in dir, oldest first, and
// skip with each line that is not a record (see Verify for why).
func Read(dir string, fn func(Record), skip func(Problem)) error {
	files, err := snapshot(dir)
	if err != nil {
		return err
	}
	readData(files, fn, skip)
	return nil
}

func readData(files []fileData, fn func(Record), skip func(Problem)) {
	var lr lineReader
	for _, f := range files {
		for n, raw := range splitLines(f.data) {
			r, err := lr.parse(raw)
			if err != nil {
				if skip != nil {
					skip(Problem{f.path, n + 1, "this is not an audit record: " + err.Error()})
				}
				continue
			}
			fn(r)
		}
	}
}
