//go:build !unix

package config

import "io/fs"

// fileOwner: this platform shows no file owner.
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }
