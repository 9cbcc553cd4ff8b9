//go:build unix

package fileowner

import (
	"io/fs"
	"syscall"
)

// UID returns the user id that owns fi, and false when fi does not say
// (a FileInfo not made by the operating system).
func UID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
