//go:build unix

package loginclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// lockPoll is how often a process waiting for the lock tries again.
const lockPoll = 20 * time.Millisecond

// takeLock holds an exclusive flock(2) on path, made 0600 when missing and
// never deleted, waiting at most until ctx ends: a holder that is still
// running keeps it however long it takes (R9), and the kernel lets go of
// a dead holder's lock. Taken, the file says who holds it, for diagnosis
// only: pid, when it was taken, and a random id.
func takeLock(ctx context.Context, path string) (release func(), err error) {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the refresh lock %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, errLockWait
		case <-time.After(lockPoll):
		}
	}
	// For a person reading the file; nothing decides by it.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(fmt.Sprintf("pid %d\ntaken %s\nid %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano), randomID())), 0)
	}
	return func() { f.Close() }, nil
}
