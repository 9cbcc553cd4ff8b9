package main

import (
	"context"
	"fmt"

	"github.com/collie-linux/collie/internal/cli/version"
)

// cmdVersion is collie version (and collie --version).
func cmdVersion(_ context.Context, e *env, args []string) error {
	if err := parse(newFlags("collie version", e), args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "collie", version.String())
	return nil
}
