// Command raft is a test double of an agent platform's raft wrapper, as
// the seed's agent-login guide (003) and docs/agent-login.md describe its
// one use by collie: `raft integration invoke --service collie --action
// agent-login --json --data-json DATA`. Like the platform, it knows which
// agent runs it and signs an assertion of that identity with the
// platform's key (loginapi's format), reads the bridge's manifest to find
// the action, calls it with DATA, and prints the platform's envelope.
//
// It reads its settings from files beside itself (the transport folder):
// platform.key (the platform's Ed25519 private key, PKCS #8 PEM),
// identity (three lines: server, agent, app), bridge.url (the bridge's
// base URL). Every call appends its arguments to calls.log.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "raft:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Dir(self)
	if f, err := os.OpenFile(filepath.Join(dir, "calls.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		fmt.Fprintln(f, strings.Join(args, " "))
		f.Close()
	}
	want := []string{"integration", "invoke", "--service", "collie", "--action", "agent-login", "--json", "--data-json"}
	if len(args) != len(want)+1 || strings.Join(args[:len(want)], " ") != strings.Join(want, " ") {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	data := args[len(want)]
	var req struct {
		CodeChallenge string `json:"code_challenge"`
	}
	if err := json.Unmarshal([]byte(data), &req); err != nil {
		return fmt.Errorf("--data-json: %w", err)
	}
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b)), err
	}
	keyPEM, err := read("platform.key")
	if err != nil {
		return err
	}
	block, _ := pem.Decode([]byte(keyPEM))
	if block == nil {
		return fmt.Errorf("platform.key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return err
	}
	key := k.(ed25519.PrivateKey)
	idText, err := read("identity")
	if err != nil {
		return err
	}
	id := strings.Split(idText, "\n")
	if len(id) != 3 {
		return fmt.Errorf("identity needs three lines: server, agent, app")
	}
	base, err := read("bridge.url")
	if err != nil {
		return err
	}

	// The platform's discovery: the manifest names the action's endpoint.
	hc := &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(base + "/.well-known/raft-agent-manifest.json")
	if err != nil {
		return err
	}
	var manifest struct {
		Schema    string `json:"schema"`
		Execution struct {
			BaseURL string `json:"base_url"`
		} `json:"execution"`
		Actions []struct {
			Name     string `json:"name"`
			Endpoint struct{ Method, Path string }
		} `json:"actions"`
	}
	err = json.NewDecoder(resp.Body).Decode(&manifest)
	resp.Body.Close()
	if err != nil || manifest.Schema != "raft-agent-manifest.v0" {
		return fmt.Errorf("the manifest is not raft-agent-manifest.v0 (%v)", err)
	}
	path := ""
	for _, a := range manifest.Actions {
		if a.Name == "agent-login" && a.Endpoint.Method == "POST" {
			path = a.Endpoint.Path
		}
	}
	if path == "" {
		return fmt.Errorf("the manifest has no agent-login action")
	}

	// The platform's proof of who calls.
	now := time.Now().Unix()
	var jti [16]byte
	rand.Read(jti[:])
	claims, _ := json.Marshal(map[string]any{"iss": id[0], "sub": id[1], "app": id[2], "aud": "collie",
		"code_challenge": req.CodeChallenge, "iat": now, "exp": now + 60, "jti": hex.EncodeToString(jti[:])})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"raft-agent-assertion+jwt"}`)) + "." + enc.EncodeToString(claims)
	assertion := signing + "." + enc.EncodeToString(ed25519.Sign(key, []byte(signing)))

	call, _ := http.NewRequest("POST", base+path, bytes.NewReader([]byte(data)))
	call.Header.Set("Content-Type", "application/json")
	call.Header.Set("Raft-Agent-Assertion", assertion)
	resp, err = hc.Do(call)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		// As the platform's CLI reports a service's refusal with --json:
		// an error envelope on stderr whose message carries the body.
		msg := fmt.Sprintf("service action failed (HTTP %d); response body: %s", resp.StatusCode, bytes.TrimSpace(body))
		out, _ := json.Marshal(map[string]any{"ok": false, "error": map[string]any{"code": "INTEGRATION_INVOKE_FAILED", "message": msg}})
		fmt.Fprintln(os.Stderr, string(out))
		os.Exit(1)
	}
	out, _ := json.Marshal(map[string]any{"ok": true, "data": map[string]any{"service": "collie", "action": "agent-login", "status": resp.StatusCode, "result": json.RawMessage(bytes.TrimSpace(body))}})
	fmt.Println(string(out))
	return nil
}
