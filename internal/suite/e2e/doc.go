// Package e2e holds end-to-end tests that run Collie's real binaries and
// units under a real systemd user manager and journald (see systemdtest).
// It has no code of its own.
package e2e
