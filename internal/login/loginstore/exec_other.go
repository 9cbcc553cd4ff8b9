//go:build !unix

package loginstore

import "io/fs"

// executable is the mode's execute bits where there is no access(2).
func executable(_ string, fi fs.FileInfo) bool { return fi.Mode()&0o111 != 0 }
