//go:build !unix

package audit

import "os"

// oNoFollow: this platform's os.OpenFile has no such flag; Open checks
// with Lstat instead, which leaves a short race.
const oNoFollow = 0

// flock is a no-op here: the Log's mutex orders the appends of one
// process, and another process writing the same log is not excluded.
func flock(*os.File, bool) (func(), error) { return func() {}, nil }

// unixModes: this platform shows no Unix permission bits, so there is
// nothing for Open to tighten.
const unixModes = false
