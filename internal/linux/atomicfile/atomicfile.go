// Package atomicfile writes private files whole or not at all: a temporary
// file in the same folder, synced, renamed over the old one, and the folder
// synced, so a crash or a failed write never leaves half a file. A save
// killed before its rename leaves its temporary file, which RemoveStale
// removes the next time the file is loaded.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// Write replaces path with data, mode 0600. The folder is made with mode
// 0700 when missing. On failure the old file is left as it was.
func Write(path string, data []byte) error {
	return WriteWith(path, data, func(w io.Writer, b []byte) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteWith is Write with the write step as a parameter, so tests can make
// it fail halfway.
func WriteWith(path string, data []byte, write func(io.Writer, []byte) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; a umask can only take bits away.
	tmp, err := os.CreateTemp(dir, tempPattern(path))
	if err != nil {
		return err
	}
	// Held until the file is closed, or the process dies: RemoveStale
	// leaves a locked temporary file alone.
	if err := lock(tmp); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("lock %s: %w", tmp.Name(), err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// Set the mode again in case the folder has a default ACL or the file
	// system makes up its own.
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		return err
	}
	if err := write(tmp, data); err != nil {
		return fmt.Errorf("write %s: %w", tmp.Name(), err)
	}
	// Sync before rename: otherwise a crash can leave the new name with no
	// data behind it.
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir survive a crash.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // Windows cannot open a folder to sync it; NTFS journals the rename
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
