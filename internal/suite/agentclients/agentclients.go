//go:build linux

// Package agentclients runs the real coding-agent CLIs (Claude Code, Codex
// CLI, Gemini CLI, OpenCode) in tests: as an unprivileged user, with a
// HOME and a project folder of their own, pointed at a scripted model API
// (internal/testkit/fakemodel), non-interactively and with a deadline.
//
// The clients come from the npm registry at the versions pinned in
// .ci/coding-agents/package.json, which .ci/deps installs into
// /opt/collie-test/npm ($COLLIE_TEST_NPM_PREFIX overrides it). Where a
// client is missing, [Require] skips the test with the reason, or fails it
// under CI=true (internal/testkit/testenv's rule).
//
// The clients run as the account collie-agents ([UserName]): Claude Code
// refuses its bypass modes as root. It is not systemdtest's collie-e2e on
// purpose: a systemdtest.Start sweeps every process of that account, and
// a client run on its own must not be killed by another test's start-up.
// A test that runs a client inside systemdtest's namespace (to reach a
// durable agent's socket) sets [Sandbox.Command] to the UserManager's
// Command instead, and the client runs as that manager's user.
package agentclients

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// Client is a coding-agent CLI, named by its command.
type Client string

// The clients .ci/deps installs.
const (
	Claude   Client = "claude"
	Codex    Client = "codex"
	Gemini   Client = "gemini"
	OpenCode Client = "opencode"
)

// Versions are the pinned versions, as each client's --version prints
// its number; they must match .ci/coding-agents/package.json
// (TestPinsMatchPackageJSON).
var Versions = map[Client]string{
	Claude:   "2.1.328",
	Codex:    "0.169.0",
	Gemini:   "0.61.0",
	OpenCode: "1.18.33",
}

// DefaultPrefix is where .ci/deps installs the clients.
const DefaultPrefix = "/opt/collie-test/npm"

// UserName is the account the clients run as; see the package doc.
const UserName = "collie-agents"

// Prefix returns the npm prefix the clients are installed in.
func Prefix() string {
	if p := os.Getenv("COLLIE_TEST_NPM_PREFIX"); p != "" {
		return p
	}
	return DefaultPrefix
}

// Path returns the client's command in the prefix, installed or not.
func Path(c Client) string { return filepath.Join(Prefix(), "node_modules", ".bin", string(c)) }

// Installed reports whether the client's command is in the prefix.
func Installed(c Client) bool {
	fi, err := os.Stat(Path(c))
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// Require returns the client's command, or is testenv.Unavailable when it
// is not installed or the test cannot switch to the unprivileged user
// (not root).
func Require(t testing.TB, c Client) string {
	t.Helper()
	if !Installed(c) {
		testenv.Unavailablef(t, "%s %s is not installed in %s (run .ci/deps as root)", c, Versions[c], Prefix())
	}
	testenv.RequireRoot(t, "run "+string(c)+" as the unprivileged user "+UserName)
	return Path(c)
}

// User is the account a client runs as.
type User struct {
	Name     string
	UID, GID int
}

// userMu keeps two tests of one binary from racing to create the account;
// useradd itself locks /etc/passwd against other binaries.
var userMu sync.Mutex

// EnsureUser returns the account UserName, creating it when missing (a
// regular account with no home and no login shell, kept afterwards like
// systemdtest's). It needs root to create it.
func EnsureUser(ctx context.Context) (User, error) {
	userMu.Lock()
	defer userMu.Unlock()
	u, err := user.Lookup(UserName)
	if errors.As(err, new(user.UnknownUserError)) {
		out, uerr := exec.CommandContext(ctx, "useradd", "--user-group", "--no-create-home",
			"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
			"--comment", "collie coding-agent test user", UserName).CombinedOutput()
		if uerr != nil {
			// Another test binary may have made it in the meantime.
			if u, err = user.Lookup(UserName); err != nil {
				return User{}, fmt.Errorf("creating the test user %s: useradd: %v: %s", UserName, uerr, out)
			}
		} else {
			u, err = user.Lookup(UserName)
		}
	}
	if err != nil {
		return User{}, fmt.Errorf("looking up the test user %s: %w", UserName, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return User{}, fmt.Errorf("the test user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return User{}, fmt.Errorf("the test user's gid %q: %w", u.Gid, err)
	}
	return User{Name: u.Username, UID: uid, GID: gid}, nil
}
