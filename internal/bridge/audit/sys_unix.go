//go:build unix

package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// oNoFollow makes an open fail on a symbolic link, so the log is never
// written through a link someone left in the state folder.
const oNoFollow = unix.O_NOFOLLOW

// flock takes (exclusive) or shares the lock on f, which other processes
// that write the same log honour; it returns the function that releases
// it. flock belongs to the open file, so two Logs of one process exclude
// each other too.
func flock(f *os.File, exclusive bool) (unlock func(), err error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	fd := int(f.Fd())
	for {
		err = unix.Flock(fd, how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return func() { unix.Flock(fd, unix.LOCK_UN) }, nil
}

// unixModes: files have Unix permission bits, which Open tightens (A1).
const unixModes = true
