//go:build !unix

package atomicfile

import "os"

const oNoFollow = 0

// lock does nothing where there is no flock: RemoveStale then goes by
// the file's age alone.
func lock(*os.File) error { return nil }

func tryLock(*os.File) bool { return true }
