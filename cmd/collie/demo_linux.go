package main

import "syscall"

// dieWithParent makes the demo agent stop when collie demo dies, however
// it dies, so no agent is left serving a removed folder.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
