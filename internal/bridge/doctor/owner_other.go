//go:build !unix

package doctor

import (
	"errors"
	"io/fs"
	"os"
)

// owner has no file owner to report on this platform (T3: the socket
// transport refuses here); it returns the user's own id, as os.Getuid
// does, so that the mode rows are judged on what the platform shows.
func owner(fs.FileInfo) int { return os.Getuid() }

// killZero cannot ask here: no process counts as alive.
func killZero(int) error { return errors.ErrUnsupported }
