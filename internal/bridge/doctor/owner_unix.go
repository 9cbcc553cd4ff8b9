//go:build unix

package doctor

import "syscall"

// killZero asks whether process pid exists (signal 0).
func killZero(pid int) error { return syscall.Kill(pid, 0) }
