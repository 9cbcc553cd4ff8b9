package loginstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type admissionCase struct {
	name       string
	env        map[string]string
	kind       Kind
	reason     string // the package's words Admit's reason starts with
	collieOnly bool   // Collie is stricter here than the package
}

// admissionCases: every fail-closed case of R4 and R13, built on a real
// transport folder. HOME and XDG are in every environment, pointing at a
// folder the package and Admit must never need.
func admissionCases(t *testing.T) []admissionCase {
	t.Helper()
	root := t.TempDir()
	home, good := filepath.Join(root, "slock"), filepath.Join(root, "transport")
	noexec, folder, empty, onPath := filepath.Join(root, "noexec"), filepath.Join(root, "folder"), filepath.Join(root, "empty"), filepath.Join(root, "path")
	for _, d := range []string{home, good, noexec, folder, empty, onPath, filepath.Join(folder, "raft")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(good, "raft"), 0o755)
	write(filepath.Join(noexec, "raft"), 0o644)
	write(filepath.Join(onPath, "raft"), 0o755)
	if err := os.Symlink(filepath.Join(good, "raft"), filepath.Join(root, "linked-raft")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "linked")
	os.Mkdir(linked, 0o755)
	if err := os.Symlink(filepath.Join(good, "raft"), filepath.Join(linked, "raft")); err != nil {
		t.Fatal(err)
	}
	m := func(dir, h, id string) map[string]string {
		return map[string]string{MarkerTransportDir: dir, MarkerHome: h, MarkerAgentID: id,
			"HOME": "/nonexistent/host-home", "XDG_CONFIG_HOME": "/nonexistent/xdg", "PATH": onPath}
	}
	cases := []admissionCase{
		{name: "none_set", env: m("", "", ""), kind: Human},
		{name: "complete", env: m(good, home, "agent-1"), kind: Agent},
		{name: "raft_a_link_to_an_executable", env: m(linked, home, "a"), kind: Agent},
		{name: "id_128_chars", env: m(good, home, "a"+strings.Repeat("b", 127)), kind: Agent},
		{name: "raft_missing_only_on_PATH", env: m(empty, home, "agent-1"), kind: FailClosed, reason: ReasonNoRaft},
		{name: "raft_not_executable", env: m(noexec, home, "agent-1"), kind: FailClosed, reason: ReasonNoRaft},
		{name: "raft_a_folder", env: m(folder, home, "agent-1"), kind: FailClosed, reason: ReasonNoRaft},
		{name: "transport_dir_missing", env: m(filepath.Join(root, "nowhere"), home, "agent-1"), kind: FailClosed, reason: ReasonNoRaft},
		{name: "id_dotdot_slash", env: m(good, home, "../x"), kind: FailClosed, reason: ReasonBadID},
		{name: "id_dot_first", env: m(good, home, ".x"), kind: FailClosed, reason: ReasonBadID},
		{name: "id_129_chars", env: m(good, home, "a"+strings.Repeat("b", 128)), kind: FailClosed, reason: ReasonBadID},
		{name: "id_slash", env: m(good, home, "a/b"), kind: FailClosed, reason: ReasonBadID},
		{name: "id_newline", env: m(good, home, "a\n"), kind: FailClosed, reason: ReasonBadID},
		{name: "id_dotdot", env: m(good, home, ".."), kind: FailClosed, reason: ReasonBadID},
		{name: "relative_home", env: m(good, "slock", "a"), kind: FailClosed, reason: ReasonRelative, collieOnly: true},
		{name: "relative_transport", env: m("transport", home, "a"), kind: FailClosed, reason: ReasonRelative, collieOnly: true},
	}
	for _, k := range []string{MarkerTransportDir, MarkerHome, MarkerAgentID} {
		for _, v := range []string{"missing", "empty"} {
			env := m(good, home, "agent-1")
			if v == "missing" {
				delete(env, k)
			} else {
				env[k] = ""
			}
			cases = append(cases, admissionCase{name: k + "_" + v, env: env, kind: FailClosed, reason: ReasonIncomplete})
		}
		only := m("", "", "")
		only[k] = m(good, home, "agent-1")[k]
		cases = append(cases, admissionCase{name: "only_" + k, env: only, kind: FailClosed, reason: ReasonIncomplete})
	}
	return cases
}

// TestAdmit_R4 is the fail-closed table: each case's kind and reason, and
// Admit reads no variable but the three markers (never HOME, XDG or PATH).
func TestAdmit_R4(t *testing.T) {
	for _, c := range admissionCases(t) {
		t.Run(c.name, func(t *testing.T) {
			a := Admit(func(k string) string {
				switch k {
				case MarkerTransportDir, MarkerHome, MarkerAgentID:
					return c.env[k]
				}
				t.Errorf("Admit read %s", k)
				return c.env[k]
			})
			if a.Kind != c.kind || !strings.HasPrefix(a.Reason, c.reason) {
				t.Fatalf("Admit = %v %q, want %v %q", a.Kind, a.Reason, c.kind, c.reason)
			}
			if a.Kind == Agent && a.Env.RaftBin != filepath.Join(c.env[MarkerTransportDir], "raft") {
				t.Fatalf("raft is %s, not the one in the transport folder", a.Env.RaftBin)
			}
			if a.Kind == FailClosed && c.reason == ReasonIncomplete {
				for _, k := range []string{MarkerTransportDir, MarkerHome, MarkerAgentID} {
					if c.env[k] == "" && !strings.Contains(a.Reason, k) {
						t.Errorf("the reason %q does not name the missing %s", a.Reason, k)
					}
				}
			}
		})
	}
}

// TestPath_R7: the slug and id rules, and the path's shape.
func TestPath_R7(t *testing.T) {
	e := Env{Home: "/h", AgentID: "agent-1"}
	p, err := Path(e, "collie")
	if err != nil || p != "/h/agents/agent-1/integrations/collie/auth.json" {
		t.Fatalf("Path = %q, %v", p, err)
	}
	for _, s := range []string{"", "Collie", "../x", ".x", "-x", "a/b", "a b", strings.Repeat("a", 81), "a\x00"} {
		if _, err := Path(e, s); err == nil {
			t.Errorf("Path accepted the slug %q", s)
		}
	}
	for _, s := range []string{"a", "hands-4cc7a2", "a.b_c-d", strings.Repeat("a", 80)} {
		if _, err := Path(e, s); err != nil {
			t.Errorf("Path refused the slug %q: %v", s, err)
		}
	}
	for _, id := range []string{"", "../x", ".x", "a/b"} {
		if _, err := Path(Env{Home: "/h", AgentID: id}, "collie"); err == nil {
			t.Errorf("Path accepted the id %q", id)
		}
	}
	if _, err := Path(Env{Home: "h", AgentID: "a"}, "collie"); err == nil {
		t.Error("Path accepted a relative SLOCK_HOME")
	}
}
