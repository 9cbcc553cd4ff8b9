//go:build unix

package doctor

import (
	"io/fs"
	"syscall"
)

// owner returns the uid that owns fi.
func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// killZero asks whether process pid exists (signal 0).
func killZero(pid int) error { return syscall.Kill(pid, 0) }
