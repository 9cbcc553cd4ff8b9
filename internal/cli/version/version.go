// Package version reports the version of Collie's programs. There is one
// source: the build sets it with -ldflags from debian/changelog (R14).
package version

import "runtime/debug"

// version is set at build time:
//
//	-ldflags "-X github.com/collie-linux/collie/internal/cli/version.version=1.2.3"
var version string

// String returns the version the build was stamped with, or for an unstamped
// build what the Go toolchain recorded ("(devel)" in a work tree).
func String() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
