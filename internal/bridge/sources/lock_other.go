//go:build !unix && !windows

package sources

import (
	"errors"
	"runtime"
)

// lockFile fails: this platform has no file locks, and an update without
// one could lose a concurrent change.
func lockFile(string) (func(), error) {
	return nil, errors.New("locking the sources file is not available on " + runtime.GOOS)
}
