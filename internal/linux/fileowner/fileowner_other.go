//go:build !unix

package fileowner

import "io/fs"

// UID returns false: this platform shows no file owner.
func UID(fs.FileInfo) (int, bool) { return 0, false }
