package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
	"github.com/collie-linux/collie/internal/testkit/systemdtest"
	"github.com/collie-linux/collie/internal/testkit/tlstest"
)

// serveTLSAgent serves a durable agent over real TLS on loopback, taking
// only token. It returns the agent's URL.
func serveTLSAgent(t *testing.T, cert tls.Certificate, token string) string {
	t.Helper()
	srv, err := durable.NewServer(wire.Hello{Agent: "remote"}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(&wire.Snapshot{Spaces: []wire.Space{{ID: "s", Title: "Remote space"}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: durable.RequireToken(durable.Tokens{Current: token}, srv.Handler()),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go hs.ServeTLS(l, "", "")
	t.Cleanup(func() { hs.Close() })
	return fmt.Sprintf("https://localhost:%d", l.Addr().(*net.TCPAddr).Port)
}

// TestTokenNeverPrinted runs every command and the daemon with a known
// token, including a refused one, and scans everything they printed and
// the whole journal: the token never appears (K5, K6).
// remoteReachable is collie durable list's row for the agent that takes
// the token: checked just now, in whatever mode, reachable.
var remoteReachable = regexp.MustCompile(`(?m)^remote +https +\S+ +\(token set\) +just now +.+ +reachable$`)

func TestTokenNeverPrinted(t *testing.T) {
	bin := build(t)
	um := systemdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const token = "k5-known-token-4f1d0c9b8a7e6d5c4b3a29180706f5e4"
	const wrong = "k5-wrong-token-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	ca := tlstest.NewCA(t, bin) // the CA file must be readable by the test user
	good := serveTLSAgent(t, ca.Issue(t, "localhost"), token)
	refusing := serveTLSAgent(t, ca.Issue(t, "localhost"), wrong)
	um.InstallUnit("collie.service", unit(t, "collie.service", bin))

	var printed strings.Builder
	collie := func(ok bool, args ...string) string {
		t.Helper()
		cmd := um.Command(ctx, filepath.Join(bin, "collie"), args...)
		cmd.Env = append(cmd.Env, "COLLIE_TEST_TOKEN="+token)
		out, err := cmd.CombinedOutput()
		printed.Write(out)
		if (err == nil) != ok {
			t.Fatalf("collie %s: err = %v (want ok=%v)\n%s", strings.Join(args, " "), err, ok, out)
		}
		return string(out)
	}
	collie(true, "durable", "attach", "remote", "--url", good, "--token-env", "COLLIE_TEST_TOKEN", "--ca-file", ca.File)
	collie(true, "durable", "attach", "refusing", "--url", refusing, "--token-env", "COLLIE_TEST_TOKEN", "--ca-file", ca.File)
	collie(false, "durable", "attach", "again", "--url", good+"/?token="+token, "--token-env", "COLLIE_TEST_TOKEN")
	collie(false, "durable", "attach", "remote", "--url", good, "--token-env", "COLLIE_TEST_TOKEN")
	collie(true, "durable", "list") // the daemon is not running: checked on the spot

	if out, err := um.Systemctl(ctx, "start", "collie.service"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	waitFor(t, loadGuard, "remote reachable and refusing refused", func() bool {
		out := collie(true, "durable", "list")
		return remoteReachable.MatchString(out) && strings.Contains(out, "unreachable: the agent refused the token")
	})
	for _, args := range [][]string{
		{"durable", "list", "--json"}, {"show"}, {"show", "--json"}, {"version"}, {"help"},
	} {
		collie(true, args...)
	}
	collie(true, "durable", "detach", "refusing")
	if out, err := um.Systemctl(ctx, "reload", "collie.service"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	status, _ := um.Systemctl(ctx, "status", "--no-pager", "-n", "50", "collie.service")
	printed.WriteString(status)
	if out, err := um.Systemctl(ctx, "stop", "collie.service"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	journal, err := um.Journal(ctx, "-o", "json", "--all")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(journal, "the agent refused the token") {
		t.Fatal("the journal does not hold the daemon's lines; the scan would prove nothing")
	}
	for name, text := range map[string]string{"command output": printed.String(), "journal": journal} {
		if strings.Contains(text, token) {
			t.Errorf("K5: the token appears in the %s", name)
		}
	}
	// It is stored where K5 says, at 0600, and nowhere else.
	src, err := os.ReadFile(um.Path(filepath.Join(um.Home, ".config/collie/sources.json")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), token) {
		t.Error("sources.json does not hold the token; the scan above would prove nothing")
	}
}
