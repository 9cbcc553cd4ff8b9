//go:build !unix

package runcmd

import (
	"os"
	"syscall"
)

// groupAttr: without Unix process groups the command runs on its own.
func groupAttr() *syscall.SysProcAttr { return nil }

// signalGroup can only stop the command itself here, not what it started.
func signalGroup(p *os.Process, _ int, _ bool) { p.Kill() }
