//go:build unix

package main

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid that owns fi, or -1 where it cannot tell.
func fileOwner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
