package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/cli"
	"github.com/collie-linux/collie/internal/login/loginclient"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// TestAgentCommandsReadOnlyMarkers_R4: in an agent environment, complete
// or not, every command collie runs there asks its environment for the
// three markers and nothing else: no HOME, XDG_*, COLLIE_TOKEN*,
// COLLIE_AGENT*; a human's collie reads its own variables as before.
func TestAgentCommandsReadOnlyMarkers_R4(t *testing.T) {
	home, transport := agentDirs(t, "#!/bin/sh\nexit 1\n")
	complete := map[string]string{loginstore.MarkerTransportDir: transport, loginstore.MarkerHome: home, loginstore.MarkerAgentID: "a1"}
	partial := map[string]string{loginstore.MarkerHome: home}
	host := map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "/r", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s",
		"COLLIE_TOKEN": strings.Repeat("t", 40), "COLLIE_TOKEN_NEXT": strings.Repeat("n", 40), "COLLIE_AGENT": "x", "COLLIE_AGENT_SOCKET": "/r/desk/x.sock"}
	commands := [][]string{{"whoami"}, {"whoami", "--json"}, {"logout"}, {"login", "--url", "http://127.0.0.1:1"}, {"ask", "--yes-no", "q"},
		{"show"}, {"pair"}, {"durable", "list"}, {"doctor"}, {"devices"}, {"audit"}, {"daemon"}, {"version"}, {"help"}}
	for name, markers := range map[string]map[string]string{"agent": complete, "fail_closed": partial} {
		for _, args := range commands {
			t.Run(name+"_"+strings.Join(args, "_"), func(t *testing.T) {
				var read []string
				var out, errb bytes.Buffer
				e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string {
					read = append(read, k)
					if v, ok := markers[k]; ok {
						return v
					}
					return host[k]
				}}
				dispatch(context.Background(), e, args)
				for _, k := range read {
					switch k {
					case loginstore.MarkerTransportDir, loginstore.MarkerHome, loginstore.MarkerAgentID:
					default:
						t.Errorf("collie %s read %s in an agent environment", strings.Join(args, " "), k)
					}
				}
			})
		}
	}
	// The human's collie is unchanged: it reads its XDG folders.
	var read []string
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { read = append(read, k); return host[k] }}
	dispatch(context.Background(), e, []string{"durable", "list"})
	if !strings.Contains(strings.Join(read, " "), "XDG_CONFIG_HOME") {
		t.Fatalf("a human's collie durable list read %v", read)
	}
}

// TestWhoami_R8: whoami from the store alone: a live session exits 0 with
// the agent, service, bridge and expiries and no token; one whose refresh
// token expired is shown and exits 1 with the login hint.
func TestWhoami_R8(t *testing.T) {
	home, transport := agentDirs(t, "#!/bin/sh\n")
	m := map[string]string{loginstore.MarkerTransportDir: transport, loginstore.MarkerHome: home, loginstore.MarkerAgentID: "agent-9"}
	a := loginstore.Admit(func(k string) string { return m[k] })
	past, future := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		refresh *string
		code    int
	}{{"live", &future, 0}, {"no_refresh_expiry", nil, 0}, {"refresh_expired", &past, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			s := loginstore.Session{Schema: loginstore.Schema, TokenType: "Bearer", AccessToken: "ACCESS-SECRET", AccessExpiresAt: past,
				RefreshToken: "REFRESH-SECRET", RefreshExpiresAt: tc.refresh}
			if _, err := loginstore.Write(a.Env, loginclient.Service, s, "https://bridge.example", time.Now()); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"whoami"}, {"whoami", "--json"}} {
				var out, errb bytes.Buffer
				e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return m[k] }, json: cli.WantsJSON(nil, args)}
				err := dispatch(context.Background(), e, args)
				if code := exitCode(err); code != tc.code {
					t.Fatalf("%v: exit %d, want %d (%v)", args, code, tc.code, err)
				}
				if err != nil {
					report(e, err, exitCode(err))
				}
				all := out.String() + errb.String()
				if !strings.Contains(all, "agent-9") || !strings.Contains(all, "https://bridge.example") || strings.Contains(all, "SECRET") {
					t.Fatalf("%v printed %s", args, all)
				}
				if tc.code != 0 && !strings.Contains(all, "collie login --url https://bridge.example") {
					t.Fatalf("%v: no login hint: %s", args, all)
				}
			}
		})
	}
}

// TestAdmissionColumn_R3: the command table's who column is the one list
// of what runs where: in an agent environment login, logout, whoami, ask,
// version and help; in an incomplete one only whoami, ask, version and
// help; every other command is the human's. A human's collie runs all.
func TestAdmissionColumn_R3(t *testing.T) {
	home, transport := agentDirs(t, "#!/bin/sh\n")
	for _, tt := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"human", map[string]string{}, nil},
		{"agent", map[string]string{loginstore.MarkerTransportDir: transport, loginstore.MarkerHome: home, loginstore.MarkerAgentID: "agent-9"},
			[]string{"ask", "login", "logout", "whoami", "version", "help"}},
		{"incomplete", map[string]string{loginstore.MarkerAgentID: "agent-9"}, []string{"ask", "whoami", "version", "help"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range commands() {
				e := &env{stdout: io.Discard, stderr: io.Discard, getenv: func(k string) string { return tt.env[k] }}
				if err := e.admit(&c); err == nil {
					got = append(got, c.name)
				}
			}
			if tt.want == nil {
				for _, c := range commands() {
					tt.want = append(tt.want, c.name)
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("admitted %q; want %q", got, tt.want)
			}
		})
	}
}

// agentDirs makes an agent platform's home and transport folders, the
// transport with a raft wrapper of the script raft.
func agentDirs(t *testing.T, raft string) (home, transport string) {
	t.Helper()
	root := t.TempDir()
	home, transport = filepath.Join(root, "slock"), filepath.Join(root, "transport")
	for _, d := range []string{home, transport} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(transport, "raft"), []byte(raft), 0o755); err != nil {
		t.Fatal(err)
	}
	return home, transport
}
