//go:build !linux

package main

import (
	"context"
	"runtime"
	"strconv"

	"github.com/collie-linux/collie/internal/cli/hint"
)

// cmdRun needs Linux: the caller check it rests on reads the caller's
// parents and cgroup from /proc.
func cmdRun(context.Context, *env, []string) error {
	return hint.New("collie run is not available on "+runtime.GOOS, "it needs Linux: its agent tells its own tools apart through /proc and cgroups")
}

// runExit is the child's exit status (Linux only).
type runExit int

func (r runExit) Error() string { return "the command exited with status " + strconv.Itoa(int(r)) }
