//go:build unix

package loginservice

import "golang.org/x/sys/unix"

// oNoFollow makes Open refuse a symbolic link where the store should be.
const oNoFollow = unix.O_NOFOLLOW
