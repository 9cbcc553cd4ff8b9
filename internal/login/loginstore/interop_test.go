package loginstore

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// The vendored package and its published integrity (npm view
// @botiverse/agent-session-store@0.2.0 dist.integrity).
const (
	vendoredTarball = "testdata/agent-session-store-0.2.0.tgz"
	publishedSHA512 = "sha512-b7V7u3XTMhtF4OeHlhUe6lwxujvGLbfGjI7QAHmo/UmCL82TWBCWUikFtWl+P6KFr+Y+SLx5cTpRpjSQVfMstw=="
)

// TestVendoredPackageIntegrity_R10: the tarball under testdata is the one
// npm publishes, byte for byte.
func TestVendoredPackageIntegrity_R10(t *testing.T) {
	data, err := os.ReadFile(vendoredTarball)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha512.Sum512(data)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != publishedSHA512 {
		t.Fatalf("the vendored package's integrity is %s, npm publishes %s", got, publishedSHA512)
	}
}

// nodePackage unpacks the vendored package where Node resolves it and
// returns the interop script's path beside it.
func nodePackage(t *testing.T) (node, script string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Unavailable(t, "node is not installed, so the interop test with @botiverse/agent-session-store cannot run; install nodejs (.ci/deps does, as root)")
	}
	// The package says node >= 20 in engines, but its code uses only what
	// Node 18 has (ESM, node:fs, node:path, node:crypto), and Debian 12's
	// nodejs, which .ci/deps installs, is 18.
	out, err := exec.Command(node, "-e", "process.stdout.write(String(Number(process.versions.node.split('.')[0]) >= 18))").Output()
	if err != nil || string(out) != "true" {
		testenv.Unavailable(t, "node 18 or later is needed to run @botiverse/agent-session-store 0.2.0")
	}
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@botiverse", "agent-session-store")
	data, err := os.ReadFile(vendoredTarball)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name, ok := strings.CutPrefix(h.Name, "package/")
		if !ok || h.Typeflag != tar.TypeReg || !filepath.IsLocal(name) {
			t.Fatalf("unexpected entry %q in the vendored package", h.Name)
		}
		dst := filepath.Join(pkg, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := os.ReadFile("testdata/interop.mjs")
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(root, "interop.mjs")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, script
}

// runNode runs the package's operation op with only the markers in its
// environment (and PATH), and returns its stdout.
func runNode(t *testing.T, node, script string, markers map[string]string, op string, input any) string {
	t.Helper()
	arg, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, op, string(arg))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range markers {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v: %s", op, err, stderr.String())
	}
	return string(out)
}

// agentHome makes a complete agent environment: SLOCK_HOME, a transport
// folder with an executable raft.
func agentHome(t *testing.T, id string) (Env, map[string]string) {
	t.Helper()
	root := t.TempDir()
	home, transport := filepath.Join(root, "slock"), filepath.Join(root, "transport")
	for _, d := range []string{home, transport} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(transport, "raft"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := map[string]string{MarkerTransportDir: transport, MarkerHome: home, MarkerAgentID: id}
	a := Admit(func(k string) string { return m[k] })
	if a.Kind != Agent {
		t.Fatalf("Admit = %v %q, want agent", a.Kind, a.Reason)
	}
	return a.Env, m
}

func ptr(s string) *string { return &s }

// interopSessions are sessions both sides store: refresh expiry null or a
// time in any RFC 3339 form (kept verbatim), tokens with every printable
// character JSON.stringify and Go's encoder could treat apart.
var interopSessions = []struct {
	name    string
	session Session
	apiBase string
}{
	{"refresh_null", Session{Schema, TokenType, "acc-0123456789abcdef", "2026-12-02T19:00:00Z", "ref-0123456789abcdef", nil}, "https://bridge.example:8443"},
	{"refresh_time_offset", Session{Schema, TokenType, "a", "2026-12-02T20:00:00.123456+01:00", "r", ptr("2027-01-01T00:00:00.5-05:30")}, "http://127.0.0.1:7373"},
	{"tokens_with_escapes", Session{Schema, TokenType, `a"b\c<d>e&f/g'h` + "`~!@#$%^*()", "2026-12-02T19:00:00Z", `{"x":[1]}\u2028`, ptr("2026-12-03T19:00:00Z")}, "https://h/api?x=<1>&y=\"2\""},
}

// TestInteropNodeWritesGoReads_R7_R10: a session the package writes is
// read by Go whole, and Go writes the very same bytes for it.
func TestInteropNodeWritesGoReads_R7_R10(t *testing.T) {
	node, script := nodePackage(t)
	for _, c := range interopSessions {
		t.Run(c.name, func(t *testing.T) {
			nodeEnv, nodeMarkers := agentHome(t, "agent-"+c.name)
			goEnv, _ := agentHome(t, "agent-"+c.name)
			updated := "2026-12-02T18:30:01.042Z"
			path := runNode(t, node, script, nodeMarkers, "write", map[string]any{"service": "collie", "session": c.session, "apiBase": c.apiBase, "updatedAt": updated})
			want, _ := Path(nodeEnv, "collie")
			if path != want {
				t.Fatalf("the package wrote %s, Path says %s", path, want)
			}
			nodeBytes, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, ok := Read(nodeEnv, "collie")
			if !ok {
				t.Fatalf("Read refused the package's file:\n%s", nodeBytes)
			}
			wantRec := Record{Session: c.session, Service: "collie", APIBase: c.apiBase, UpdatedAt: updated}
			if !equalRecord(r, wantRec) {
				t.Fatalf("Read = %+v, want %+v", r, wantRec)
			}
			if got := Encode(r); !bytes.Equal(got, nodeBytes) {
				t.Fatalf("Go encodes the record read as\n%s\nthe package wrote\n%s", got, nodeBytes)
			}
			now, _ := time.Parse(time.RFC3339, updated)
			goPath, err := Write(goEnv, "collie", c.session, c.apiBase, now)
			if err != nil {
				t.Fatal(err)
			}
			goBytes, _ := os.ReadFile(goPath)
			if !bytes.Equal(goBytes, nodeBytes) {
				t.Fatalf("Go wrote\n%s\nthe package wrote\n%s", goBytes, nodeBytes)
			}
			sameModes(t, nodeEnv, goEnv)
		})
	}
}

// TestInteropGoWritesNodeReads_R7_R10: a session Go writes is read by the
// package, every value and key order kept.
func TestInteropGoWritesNodeReads_R7_R10(t *testing.T) {
	node, script := nodePackage(t)
	for _, c := range interopSessions {
		t.Run(c.name, func(t *testing.T) {
			env, markers := agentHome(t, "a.b_c-"+c.name)
			path, err := Write(env, "collie", c.session, c.apiBase, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			goBytes, _ := os.ReadFile(path)
			got := runNode(t, node, script, markers, "read", map[string]any{"service": "collie"})
			if got != string(goBytes) {
				t.Fatalf("the package read back\n%s\nGo wrote\n%s", got, goBytes)
			}
		})
	}
}

// TestInteropExtraKeysAndNull_R10: the package stores what its caller
// passes, extra members included; Read accepts them and a null refresh
// expiry, and refuses a session without refresh_expires_at, as the
// package does.
func TestInteropExtraKeysAndNull_R10(t *testing.T) {
	node, script := nodePackage(t)
	env, markers := agentHome(t, "agent-x")
	session := map[string]any{"schema": Schema, "token_type": TokenType, "access_token": "acc", "access_expires_at": "2026-12-02T19:00:00Z",
		"refresh_token": "ref", "refresh_expires_at": nil, "scope": []string{"ask"}, "note": map[string]any{"n": 1}}
	runNode(t, node, script, markers, "write", map[string]any{"service": "collie", "session": session, "apiBase": "https://b", "updatedAt": "2026-12-02T18:30:01.042Z"})
	r, ok := Read(env, "collie")
	if !ok || r.RefreshExpiresAt != nil || r.AccessToken != "acc" {
		t.Fatalf("Read = %+v, %v; want the session with refresh_expires_at null", r, ok)
	}
	delete(session, "refresh_expires_at")
	runNode(t, node, script, markers, "write", map[string]any{"service": "collie", "session": session, "apiBase": "https://b", "updatedAt": "2026-12-02T18:30:01.042Z"})
	if out := runNode(t, node, script, markers, "read", map[string]any{"service": "collie"}); out != "null" {
		t.Fatalf("the package read a session without refresh_expires_at: %s", out)
	}
	if _, ok := Read(env, "collie"); ok {
		t.Fatal("Read accepted a session without refresh_expires_at, which the package refuses")
	}
}

// TestInteropAdmission_R4: the package and Admit agree on every case, kind
// and reason words (Collie may add which marker is missing after a colon).
func TestInteropAdmission_R4(t *testing.T) {
	node, script := nodePackage(t)
	for _, c := range admissionCases(t) {
		if c.collieOnly {
			continue // Collie is stricter here than the package (see the package doc)
		}
		t.Run(c.name, func(t *testing.T) {
			var got struct{ Kind, Reason string }
			if err := json.Unmarshal([]byte(runNode(t, node, script, c.env, "admit", nil)), &got); err != nil {
				t.Fatal(err)
			}
			a := Admit(func(k string) string { return c.env[k] })
			reason, _, _ := strings.Cut(a.Reason, ":")
			if got.Kind != a.Kind.String() || got.Reason != reason {
				t.Fatalf("the package says %s %q, Admit %s %q", got.Kind, got.Reason, a.Kind, a.Reason)
			}
		})
	}
}

func equalRecord(a, b Record) bool {
	ra, rb := a.RefreshExpiresAt, b.RefreshExpiresAt
	a.RefreshExpiresAt, b.RefreshExpiresAt = nil, nil
	return a == b && (ra == nil) == (rb == nil) && (ra == nil || *ra == *rb)
}

// sameModes: the folders below SLOCK_HOME are 0700 and auth.json 0600 on
// both sides, and SLOCK_HOME is untouched (0755).
func sameModes(t *testing.T, envs ...Env) {
	t.Helper()
	for _, e := range envs {
		path, _ := Path(e, "collie")
		want := map[string]os.FileMode{e.Home: 0o755, path: 0o600}
		for d := filepath.Dir(path); d != e.Home; d = filepath.Dir(d) {
			want[d] = 0o700
		}
		for p, m := range want {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != m {
				t.Errorf("%s has mode %o, want %o", p, fi.Mode().Perm(), m)
			}
		}
	}
}
