// Package caddytest runs Debian's caddy for tests, as docs/phone.md's
// recipe has it: a site with `tls internal` (Caddy's own authority) that
// reverse-proxies to a loopback address.
package caddytest

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/collie-linux/collie/internal/testkit/testbuf"
	"github.com/collie-linux/collie/internal/testkit/testenv"
)

// Need returns the path of caddy, or marks the test unavailable (which
// fails it under CI=true, where .ci/deps installs caddy).
func Need(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("caddy")
	if err != nil {
		testenv.Unavailable(t, "caddy is not installed, so the test through a real reverse proxy cannot run; install it with: apt-get install caddy (.ci/deps does, as root)")
	}
	return p
}

// FreePort is a loopback port nothing listens on now.
func FreePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// Proxy is a running caddy.
type Proxy struct {
	// Root is its authority's root certificate, RootFile where Caddy keeps
	// it (what a user installs on this machine and the phone).
	Root     *x509.Certificate
	RootFile string
	// SPKIs are the base64 SHA-256 hashes of the root's and the
	// intermediate's public keys, comma-separated (for chromium's
	// --ignore-certificate-errors-spki-list).
	SPKIs string
	// Stop stops caddy (also done at the test's end).
	Stop func()
}

// Start runs caddy with a site for name on 127.0.0.1:port, with tls
// internal, reverse-proxying to upstream, and returns once it serves the
// name under its authority. Its state and authority live in a temporary
// folder; it never touches the machine's trust store.
func Start(t *testing.T, caddy, name, port, upstream string) *Proxy {
	t.Helper()
	dir := t.TempDir()
	caddyfile := fmt.Sprintf(`{
	admin off
	skip_install_trust
	auto_https disable_redirects
	http_port %s
	https_port %s
	storage file_system {
		root %s
	}
}

%s {
	bind 127.0.0.1
	tls internal
	reverse_proxy %s
}
`, FreePort(t), port, filepath.Join(dir, "data"), name, upstream)
	path := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(path, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testbuf.Buffer
	cmd := exec.Command(caddy, "run", "--adapter", "caddyfile", "--config", path)
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "xdg-data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg-config"))
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start caddy: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		select {
		case <-done:
			return
		default:
		}
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	// Ready: its authority's root is written and it serves the name.
	rootFile := filepath.Join(dir, "data", "pki", "authorities", "local", "root.crt")
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		select {
		case <-done:
			t.Fatalf("caddy stopped:\n%s", logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("caddy did not serve %s with its authority within 20s:\n%s", name, logs.String())
		}
		root, err := readCert(rootFile)
		if err != nil {
			continue
		}
		pool := x509.NewCertPool()
		pool.AddCert(root)
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", "127.0.0.1:"+port, &tls.Config{ServerName: name, RootCAs: pool})
		if err != nil {
			continue
		}
		c.Close()
		var hashes []string
		for _, f := range []string{rootFile, filepath.Join(filepath.Dir(rootFile), "intermediate.crt")} {
			if c, err := readCert(f); err == nil {
				sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
				hashes = append(hashes, base64.StdEncoding.EncodeToString(sum[:]))
			}
		}
		return &Proxy{Root: root, RootFile: rootFile, SPKIs: strings.Join(hashes, ","), Stop: stop}
	}
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(data)
	if blk == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	return x509.ParseCertificate(blk.Bytes)
}
