package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/bridge/control"
	"github.com/collie-linux/collie/internal/bridge/device"
	"github.com/collie-linux/collie/internal/bridge/view"
	"github.com/collie-linux/collie/internal/login/loginstore"
)

// TestAgentLoginEndToEnd_R13 is agent login with every part real but the
// platform: the bridge as a user service with agent login on ([agents]
// platform_key_file), the built collie in an agent environment whose raft
// wrapper is the platform's double (testdata/raftdouble: it signs which
// agent calls with the platform's key and calls the bridge's agent-login
// action the manifest names). The agent logs in, says who it is, asks
// its human, whose paired device answers the question shown under the
// agent's own board; the human lists and revokes the agent's session,
// after which the agent is told to log in again; logout removes the
// session. No credential appears in any output, the journal, the audit
// log or collie agents list (R6).
func TestAgentLoginEndToEnd_R13(t *testing.T) {
	r := startBridge(t, 3*time.Minute, bridgeSetup{units: []string{"collie.service"}})
	um, bin, ctx, must := r.um, r.bin, r.ctx, r.must
	human := func(args ...string) string {
		t.Helper()
		return must(um.Run(ctx, filepath.Join(bin, "collie"), args...))
	}

	// The platform's key: the bridge gets the public half.
	plat := newPlatform(t, um)
	keyFile := plat.keyFile
	cfg := filepath.Join(um.Home, ".config/collie/config.toml")
	ntfy := newNtfy(t) // the push guard applies to an agent session's questions (D9)
	if err := um.WriteFile(cfg, fmt.Appendf(nil, "[devices]\nlisten = \"127.0.0.1:%d\"\n\n[agents]\nplatform_key_file = %q\n\n[push]\ndesktop = false\nwebpush = false\n\n[push.ntfy]\nserver = %q\ntopic = \"collie-agent-login\"\n",
		freePort(t), keyFile, ntfy.srv.URL), 0o600); err != nil {
		t.Fatal(err)
	}
	must(um.Systemctl(ctx, "start", "collie.service"))

	// A paired device, as the human has.
	dev, _ := pairDevice(t, human("pair", "--local", "--json"), "phone")
	base := dev.base

	// The agent's environment: its home and the platform's transport
	// folder with the raft double. Nothing of the human's HOME or XDG.
	agentEnv := plat.agentEnv(t, base)
	var outputs []string
	agent := func(args ...string) (string, int) {
		t.Helper()
		out, code := runIn(t, ctx, bin, agentEnv, args...)
		outputs = append(outputs, out)
		return out, code
	}

	if out, code := agent("login", "--url", base); code != 0 {
		t.Fatalf("collie login: exit %d\n%s", code, out)
	}
	out, code := agent("whoami", "--json")
	var who struct {
		Kind    string `json:"kind"`
		AgentID string `json:"agent_id"`
	}
	json.Unmarshal([]byte(out), &who)
	if code != 0 || who.Kind != "agent" || who.AgentID != "Agent-7" {
		t.Fatalf("collie whoami: exit %d %s", code, out)
	}
	admission := loginstore.Admit(func(k string) string {
		for _, kv := range agentEnv {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	})
	rec, ok := loginstore.Read(admission.Env, "collie")
	if !ok {
		t.Fatal("no session stored after login")
	}
	secrets := []string{rec.AccessToken, rec.RefreshToken}

	// The agent asks; the human's device sees it under the agent's board
	// and answers.
	type result struct {
		out  string
		code int
	}
	asked := make(chan result, 1)
	go func() {
		out, code := agent("ask", "--yes-no", "Deploy 1a2b3c?")
		asked <- result{out, code}
	}()
	var st device.State
	board := ""
	waitFor(t, 20*time.Second, "the agent's question on the device API", func() bool {
		dev.call("GET", "/api/v1/state", "", nil, &st)
		for _, a := range st.Agents {
			if strings.HasPrefix(a.Name, "raft.agent-7.") && a.Snapshot != nil && len(questions(device.State{Agents: []view.Agent{a}})) == 1 {
				board = a.Name
				return true
			}
		}
		return false
	})
	q := questions(st)[0]
	answer, _ := json.Marshal(map[string]any{"requestId": "tap1", "conversation": "asks", "question": q.ID, "revision": q.Revision, "optionIds": []string{"yes"}})
	if status := dev.call("POST", "/api/v1/agents/"+board+"/answer", string(answer), map[string]string{device.WriteHeader: "1"}, nil); status != 200 {
		t.Fatalf("the device's answer: %d", status)
	}
	select {
	case r := <-asked:
		if r.code != 0 {
			t.Fatalf("collie ask: exit %d, want 0 (yes)\n%s", r.code, r.out)
		}
	case <-ctx.Done():
		t.Fatal("collie ask did not return after the answer")
	}

	// The question was pushed, naming the agent, as any agent's is.
	waitFor(t, 10*time.Second, "the push of the agent's question", func() bool { return len(ntfy.titles()) == 1 })
	if got := ntfy.titles()[0]; !strings.HasPrefix(got, "Agent-7: ") {
		t.Fatalf("the push's title %q does not name the agent", got)
	}

	// The session survives a restart of the bridge (its store is on disk);
	// the board comes back at the agent's next ask.
	must(um.Systemctl(ctx, "restart", "collie.service"))
	go func() {
		out, code := agent("ask", "--yes-no", "After the restart?")
		asked <- result{out, code}
	}()
	q = struct {
		ID       string
		Revision int64
	}{}
	waitFor(t, 20*time.Second, "the agent's question after the restart", func() bool {
		var st device.State
		dev.call("GET", "/api/v1/state", "", nil, &st)
		for _, a := range st.Agents {
			if a.Name == board {
				if qs := questions(device.State{Agents: []view.Agent{a}}); a.Snapshot != nil && len(qs) == 1 {
					q = qs[0]
					return true
				}
			}
		}
		return false
	})
	answer, _ = json.Marshal(map[string]any{"requestId": "tap2", "conversation": "asks", "question": q.ID, "revision": q.Revision, "optionIds": []string{"no"}})
	if status := dev.call("POST", "/api/v1/agents/"+board+"/answer", string(answer), map[string]string{device.WriteHeader: "1"}, nil); status != 200 {
		t.Fatalf("the device's answer after the restart: %d", status)
	}
	if r := <-asked; r.code != 1 {
		t.Fatalf("collie ask after the restart, answered no: exit %d, want 1\n%s", r.code, r.out)
	}

	// R13: 20 collie processes at once, with the access token about to
	// expire, refresh it exactly once. Were a second process to refresh
	// with the rotated-away token, the bridge would see reuse and revoke
	// the whole chain, and the asks would fail closed.
	before, _ := loginstore.Read(admission.Env, "collie")
	expiring := before.Session
	expiring.AccessExpiresAt = time.Now().Add(30 * time.Second).UTC().Format(time.RFC3339) // within the 60 s of early refresh
	if _, err := loginstore.Write(admission.Env, "collie", expiring, before.APIBase, time.Now()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes, outs := make([]int, 20), make([]string, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "collie"), "ask", "--yes-no", "--timeout", "1s", fmt.Sprintf("Concurrent %d?", i))
			cmd.Env = agentEnv
			out, err := cmd.CombinedOutput()
			outs[i], codes[i] = string(out), cmd.ProcessState.ExitCode()
			if err != nil && cmd.ProcessState == nil {
				outs[i] = err.Error()
			}
		}()
	}
	wg.Wait()
	outputs = append(outputs, outs...)
	for i, code := range codes {
		if code != 3 {
			t.Fatalf("concurrent ask %d: exit %d, want 3 (timed out, denied by default)\n%s", i, code, outs[i])
		}
	}
	after, _ := loginstore.Read(admission.Env, "collie")
	if after.RefreshToken == before.RefreshToken || after.AccessToken == before.AccessToken {
		t.Fatal("the 20 processes did not refresh the expiring session")
	}
	secrets = append(secrets, after.AccessToken, after.RefreshToken)

	// The human sees the agent's session, never a token, and revokes it.
	var sessions []control.AgentSession
	listed := human("agents", "list", "--json")
	if err := json.Unmarshal([]byte(listed), &sessions); err != nil || len(sessions) != 1 || sessions[0].Agent != "Agent-7" || sessions[0].Server != "srv-1" || sessions[0].Board != board ||
		sessions[0].Refreshed.IsZero() || !sessions[0].Revoked.IsZero() {
		t.Fatalf("collie agents list: %v %s", err, listed)
	}
	outputs = append(outputs, listed, human("agents", "list"))
	outputs = append(outputs, human("agents", "revoke", "Agent-7"))
	out, code = agent("ask", "--yes-no", "Again?")
	if code != 5 || !strings.Contains(out, "collie login") {
		t.Fatalf("ask after the human revoked the session: exit %d, want 5 and the login hint\n%s", code, out)
	}
	// Logging in again recovers (R13); logout removes the session.
	if out, code := agent("login", "--url", base); code != 0 {
		t.Fatalf("collie login after the revocation: exit %d\n%s", code, out)
	}
	if rec2, ok := loginstore.Read(admission.Env, "collie"); ok {
		secrets = append(secrets, rec2.AccessToken, rec2.RefreshToken)
	}
	if out, code := agent("logout"); code != 0 {
		t.Fatalf("collie logout: exit %d\n%s", code, out)
	}
	if _, ok := loginstore.Read(admission.Env, "collie"); ok {
		t.Fatal("logout left the session")
	}
	if out, code := agent("whoami"); code == 0 {
		t.Fatalf("whoami after logout: exit 0\n%s", out)
	}

	// R6: no credential in any output, the journal or the audit log.
	for _, e := range userJournal(t, ctx, um) {
		if m, ok := e["MESSAGE"].(string); ok {
			outputs = append(outputs, m)
		}
		b, _ := json.Marshal(e)
		outputs = append(outputs, string(b))
	}
	outputs = append(outputs, human("audit", "--json"))
	for _, s := range secrets {
		for _, o := range outputs {
			if strings.Contains(o, s) {
				t.Fatalf("R6: a credential appears in an output: %q", o)
			}
		}
	}
}
