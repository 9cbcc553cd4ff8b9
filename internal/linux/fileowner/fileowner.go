// Package fileowner reads the user id that owns a file from what Stat or
// Lstat returned, on every platform: each caller decides what a platform
// that shows no owner means for its own check.
package fileowner
