package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// runScript stands in for a coding agent under collie run: its hook asks
// through collie ask (which finds the run's socket with no flag); its
// Bash tool tries to answer over the socket, once directly and once from
// a process that double-forked away (setsid, its parent gone). Its stdin
// is the test's, to say when to go on.
const runScript = `
collie ask --yes-no "Deploy main?" > ask.out 2>&1 &
ask=$!
echo "cgroup $(grep '^0::' /proc/self/cgroup)"
read q
body='{"requestId":"tool-REQ","conversation":"run","question":"'"$q"'","revision":1,"optionIds":["yes"]}'
answer() { curl -sS -o "$1.json" -w '%{http_code}' --unix-socket "$COLLIE_AGENT_SOCKET" -H 'Collie-Protocol: 1' -d "$(echo "$body" | sed "s/REQ/$1/")" http://agent/v1/answer; }
echo "tool $(answer direct) $(cat direct.json)"
mkfifo orphan.done
( setsid sh -c "curl -sS -o orphan.json -w '%{http_code}' --unix-socket \"$COLLIE_AGENT_SOCKET\" -H 'Collie-Protocol: 1' -d '$(echo "$body" | sed "s/REQ/orphan/")' http://agent/v1/answer > orphan.code; echo > orphan.done" & )
read x < orphan.done
echo "orphan $(cat orphan.code) $(cat orphan.json)"
wait $ask
echo "ask $? $(cat ask.out)"
`

// TestRunUnderUserManager_C2_C4: collie run under a real systemd user
// manager and bridge. Started from a service of the manager's (as from a
// login session, whose processes the manager may take), the run gets a
// transient scope; started where the manager cannot take it and the cgroup
// tree is not the user's, it falls back to its process family. Either way
// the coding agent's tools, a double-forked one included, get 403
// caller-refused and the question stays open; a paired device answers
// through the bridge; the bridge shows the run as a conversation
// titled with the client and the folder while it runs, and the run
// detaches when the child exits; collie doctor's runs row
// names the protection; the exit status is the child's.
func TestRunUnderUserManager_C2_C4(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Unavailable(t, "curl is not installed (.ci/deps installs it)")
	}
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, name := range []string{"collie.service", "collie.service.d/sandbox.conf"} {
		um.InstallUnit(name, unit(t, name, bin))
	}
	cfg := filepath.Join(um.Home, ".config/collie/config.toml")
	if err := um.MkdirAll(filepath.Dir(cfg)); err != nil {
		t.Fatal(err)
	}
	if err := um.WriteFile(cfg, []byte("[devices]\nlisten = \"127.0.0.1:0\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := um.Systemctl(ctx, "start", "collie.service"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pairing, err := um.Run(ctx, bin+"/collie", "pair", "--local", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, pairing)
	}
	dev, _ := pairDevice(t, pairing, "e2e phone")
	path := "PATH=" + bin + ":/usr/bin:/bin"
	for _, tc := range []struct {
		name, protection, run string
		argv                  []string
	}{
		{"scope", "cgroup scope", "s1", []string{"systemd-run", "--user", "--quiet", "--pipe", "--wait", "-E", path,
			"-p", "WorkingDirectory=" + um.Home, bin + "/collie", "run", "--name", "s1", "--", "sh", "-c", runScript + "exit 3"}},
		// cd: the harness's working folder is the host's, which getcwd
		// cannot name inside the namespace.
		{"family", "process family", "f1", []string{"sh", "-c", `cd "$HOME" && exec env ` + path + ` collie run --name f1 -- sh -c "$1"`, "sh", runScript + "exit 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runName := tc.run
			cmd := um.Command(ctx, tc.argv[0], tc.argv[1:]...)
			stdin, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			lines := bufio.NewScanner(out)
			line := func() string {
				t.Helper()
				if !lines.Scan() {
					t.Fatalf("the child's output ended; collie run said:\n%s", stderr.String())
				}
				return lines.Text()
			}
			cg := line()
			t.Logf("%s", cg)
			if tc.name == "scope" && (!strings.Contains(cg, "/collie-run-"+runName+"-") || !strings.HasSuffix(cg, ".scope")) {
				t.Fatalf("the child's cgroup: %s", cg)
			}

			// The run's question reaches the device through the bridge, in
			// the run's conversation.
			var q wire.Question
			waitFor(t, 30*time.Second, "the run's question over the device API", func() bool {
				var st device.State
				dev.call("GET", "/api/v1/state", "", nil, &st)
				for _, a := range st.Agents {
					if a.Name != runName || a.Snapshot == nil {
						continue
					}
					c := a.Snapshot.Spaces[0].Tabs[0].Conversations[0]
					if c.Title != "sh in ~" || c.Closed {
						t.Fatalf("the run's conversation: %+v", c)
					}
					if len(c.Questions) == 1 {
						q = c.Questions[0]
						return true
					}
				}
				return false
			})
			doctor, _ := um.Run(ctx, bin+"/collie", "doctor", "--check", "runs")
			if !strings.Contains(doctor, runName) || !strings.Contains(doctor, "by "+tc.protection) {
				t.Errorf("collie doctor --check runs:\n%s", doctor)
			}

			io.WriteString(stdin, q.ID+"\n")
			for _, who := range []string{"tool", "orphan"} {
				if l := line(); !strings.HasPrefix(l, who+" 403 ") || !strings.Contains(l, `"caller-refused"`) {
					t.Fatalf("the %s's answer: %s\ncollie run said:\n%s", who, l, stderr.String())
				}
			}
			// Outside the run, the bridge forwards the device's tap.
			body := fmt.Sprintf(`{"requestId":"dev-%s","conversation":"run","question":%q,"revision":%d,"optionIds":["yes"]}`, runName, q.ID, q.Revision)
			if status := dev.call("POST", "/api/v1/agents/"+runName+"/answer", body, map[string]string{device.WriteHeader: "1"}, nil); status != 200 {
				t.Fatalf("the device's answer: %d", status)
			}
			if l := line(); !strings.HasPrefix(l, "ask 0") {
				t.Fatalf("collie ask: %s", l)
			}
			stdin.Close()
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
				t.Fatalf("collie run ended %v, want exit status 3; it said:\n%s", err, stderr.String())
			}
			// Detached at the end; the doctor row goes with the run.
			o, _ := um.Run(ctx, bin+"/collie", "durable", "list")
			if strings.Contains(o, runName) {
				t.Errorf("the run is still attached:\n%s", o)
			}
			if o, _ := um.Run(ctx, bin+"/collie", "doctor", "--check", "runs"); strings.Contains(o, runName) {
				t.Errorf("collie doctor still lists the run:\n%s", o)
			}
		})
	}
}
