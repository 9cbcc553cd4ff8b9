package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/agentsession"
)

// TestAgentCommandsReadOnlyMarkers_R4: in an agent environment, complete
// or not, every command collie runs there asks its environment for the
// three markers and nothing else: no HOME, XDG_*, COLLIE_TOKEN*,
// COLLIE_AGENT*; a human's collie reads its own variables as before.
func TestAgentCommandsReadOnlyMarkers_R4(t *testing.T) {
	root := t.TempDir()
	home, transport := filepath.Join(root, "slock"), filepath.Join(root, "transport")
	os.Mkdir(home, 0o700)
	os.Mkdir(transport, 0o700)
	os.WriteFile(filepath.Join(transport, "raft"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
	complete := map[string]string{agentsession.MarkerTransportDir: transport, agentsession.MarkerHome: home, agentsession.MarkerAgentID: "a1"}
	partial := map[string]string{agentsession.MarkerHome: home}
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
					case agentsession.MarkerTransportDir, agentsession.MarkerHome, agentsession.MarkerAgentID:
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
