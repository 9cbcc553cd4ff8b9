//go:build !linux

package main

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent; elsewhere
// collie demo stops the agent when it returns.
func dieWithParent() *syscall.SysProcAttr { return nil }
