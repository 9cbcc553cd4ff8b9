// Package loginstore is agent admission and per-agent session storage
// for a service CLI on an agent platform (the seed's Raft, formerly Slock):
// Admit says whether the process runs as a human, as an agent, or in an
// agent environment that is incomplete (fail closed), and Write and Read
// keep one service's session under the agent's own SLOCK_HOME (R4, R7,
// R10). It is service-agnostic: the service slug is a parameter with no
// default (Collie's is "collie"). PKCE, the agent-login call, exchange,
// refresh and the cross-process refresh lock are the CLI's
// (internal/login/loginclient), not this package's.
//
// It is interoperable with the published npm package
// @botiverse/agent-session-store 0.2.0 in both directions, and its test
// runs the vendored package under Node to prove it: the same markers, the
// same reason words, the same path, slug and id rules, folders below
// SLOCK_HOME made 0700 and repaired to 0700 where wider (SLOCK_HOME itself
// never made or changed), the same atomic write (a same-folder
// ".auth.<16 hex>.tmp" opened O_EXCL 0600, written, synced, closed and
// renamed; on failure the temp goes and the old session stays), and the
// same bytes: JSON.stringify(record, null, 2) + "\n", keys in its order,
// updated_at in toISOString form. Collie syncs the folder after the
// rename besides, so the rename survives a crash.
//
// Where Collie is stricter than the package, and why:
//   - SLOCK_HOME and SLOCK_CLI_TRANSPORT_DIR must be absolute paths (fail
//     closed otherwise): a relative one would make the session and the
//     raft wrapper depend on the working folder of whatever command runs.
//   - A folder below SLOCK_HOME, or auth.json, that is a symbolic link is
//     refused, in writing and reading: the slug must not be able to escape
//     the agent's folder (R7), and a link would be an escape.
//   - Write refuses a session whose values would not survive the trip:
//     tokens must be 1 to 4096 bytes of printable ASCII without spaces
//     (they go into an Authorization header), times RFC 3339, api_base
//     printable ASCII. With only such values Go's encoder and
//     JSON.stringify write the same bytes (they differ on U+2028, U+2029
//     and invalid UTF-8, which never appear).
//   - Read returns none, where the package would return a record, for:
//     a file over 64 KiB, a member name given twice (JSON.parse keeps the
//     last, so two readers could disagree), invalid UTF-8 (Node replaces
//     it), tokens not as Write requires, access_expires_at or a string
//     refresh_expires_at that is not RFC 3339 (the CLI decides when to
//     refresh by them), a service member that is not the service asked
//     for, and an empty api_base. Everything the package writes for a
//     well-formed session, extra members and refresh_expires_at null
//     included, Read accepts.
package loginstore

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/collie-linux/collie/internal/login/loginwire"
)

// The three markers of an agent environment, as the platform's daemon sets
// them. An empty value counts as unset.
const (
	MarkerTransportDir = "SLOCK_CLI_TRANSPORT_DIR"
	MarkerHome         = "SLOCK_HOME"
	MarkerAgentID      = "SLOCK_AGENT_ID"
)

// The package's reason words for a fail-closed admission. Collie's reasons
// start with them and may say more after a colon.
const (
	ReasonIncomplete = "incomplete agent markers"
	ReasonBadID      = "invalid SLOCK_AGENT_ID"
	ReasonNoRaft     = "raft wrapper missing or not executable in transport dir"
	// ReasonRelative is Collie's own (the package admits a relative path).
	ReasonRelative = "agent paths must be absolute"
)

// Kind is what Admit found.
type Kind int

// The three kinds of admission.
const (
	Human Kind = iota + 1
	Agent
	FailClosed
)

func (k Kind) String() string {
	switch k {
	case Human:
		return "human"
	case Agent:
		return "agent"
	case FailClosed:
		return "fail_closed"
	}
	return "unknown"
}

// Env is a complete agent environment.
type Env struct {
	TransportDir string // SLOCK_CLI_TRANSPORT_DIR
	Home         string // SLOCK_HOME
	AgentID      string // SLOCK_AGENT_ID
	RaftBin      string // TransportDir/raft, never the raft on PATH
}

// Admission is Admit's answer: Env is set for Agent, Reason for FailClosed.
type Admission struct {
	Kind   Kind
	Env    Env
	Reason string
}

// Admit decides from getenv alone (and a stat of the raft wrapper): no
// marker set is Human; all three set, a valid id and an executable
// regular file TransportDir/raft is Agent; anything else is FailClosed
// with the reason, which never falls back to the human's credentials
// (R4).
func Admit(getenv func(string) string) Admission {
	dir, home, id := getenv(MarkerTransportDir), getenv(MarkerHome), getenv(MarkerAgentID)
	if dir == "" && home == "" && id == "" {
		return Admission{Kind: Human}
	}
	var missing []string
	for _, m := range [][2]string{{MarkerTransportDir, dir}, {MarkerHome, home}, {MarkerAgentID, id}} {
		if m[1] == "" {
			missing = append(missing, m[0])
		}
	}
	if len(missing) > 0 {
		return failed(ReasonIncomplete + ": " + strings.Join(missing, ", ") + " not set")
	}
	if !loginwire.ValidID(id) {
		return failed(ReasonBadID)
	}
	for _, m := range [][2]string{{MarkerTransportDir, dir}, {MarkerHome, home}} {
		if !filepath.IsAbs(m[1]) {
			return failed(ReasonRelative + ": " + m[0] + " is not an absolute path")
		}
	}
	raft := filepath.Join(dir, "raft")
	if !isExecutableFile(raft) {
		return failed(ReasonNoRaft)
	}
	return Admission{Kind: Agent, Env: Env{TransportDir: dir, Home: home, AgentID: id, RaftBin: raft}}
}

func failed(reason string) Admission { return Admission{Kind: FailClosed, Reason: reason} }

// isExecutableFile is the package's: stat (following a link) says a
// regular file, and access(2) says executable.
func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return executable(p, fi)
}
