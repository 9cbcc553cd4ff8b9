package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/collie-linux/collie/internal/agent/durable"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// HTTPSConfig is [https]: the agent also serves the token transport, for a
// bridge on another host (K1). There is no caller check there (K3).
type HTTPSConfig struct {
	// Listen is host:port. Plain HTTP only on loopback; beyond it, Cert
	// and Key are required.
	Listen string `toml:"listen" example:"\"127.0.0.1:8443\""`
	Cert   string `toml:"cert" example:"\"/home/me/.config/collie-agent/cert.pem\""`
	Key    string `toml:"key" example:"\"/home/me/.config/collie-agent/key.pem\""`
	// Token and TokenNext may be given here, in NAME.env beside the
	// config, or as COLLIE_TOKEN and COLLIE_TOKEN_NEXT in the environment
	// (which win). A file that holds a token must be 0600 (K5).
	Token     string `toml:"token"`
	TokenNext string `toml:"token_next"`
}

// checkHTTPS checks [https] as listenHTTPS will use it, without listening:
// the address, TLS beyond loopback, and the certificate and key files.
func checkHTTPS(c *HTTPSConfig) error {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("[https] listen = %q is not host:port; for example \"127.0.0.1:8443\" or \":8443\"", c.Listen)
	}
	if (c.Cert == "") != (c.Key == "") {
		return errors.New("[https] needs both cert and key, or neither")
	}
	ip, ipErr := netip.ParseAddr(host)
	loopback := host == "localhost" || (ipErr == nil && ip.IsLoopback())
	if c.Cert == "" && !loopback {
		return fmt.Errorf("[https] listen = %q is reachable beyond this machine, so it needs TLS: give cert and key (plain http:// is only for 127.0.0.1 or localhost)", c.Listen)
	}
	if c.Cert == "" {
		return nil
	}
	if _, err := tls.LoadX509KeyPair(c.Cert, c.Key); err != nil {
		return fmt.Errorf("[https] load cert %s and key %s: %w", c.Cert, c.Key, err)
	}
	return privateFile(c.Key, "the TLS key")
}

// listenHTTPS opens the token transport's listener, with TLS unless it is
// on loopback without a certificate.
func listenHTTPS(c *HTTPSConfig) (net.Listener, string, error) {
	if err := checkHTTPS(c); err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", c.Listen, err)
	}
	if c.Cert == "" {
		return l, "http://" + l.Addr().String(), nil
	}
	cert, err := tls.LoadX509KeyPair(c.Cert, c.Key)
	if err != nil {
		l.Close()
		return nil, "", fmt.Errorf("[https] load cert %s and key %s: %w", c.Cert, c.Key, err)
	}
	return tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), "https://" + l.Addr().String(), nil
}

// loadTokens finds the agent's tokens (K5, K6): the environment first, then
// NAME.env beside the config, then the config itself. A file that holds a
// token must be 0600, or the agent refuses to start.
func loadTokens(c *HTTPSConfig, cfgPath string, getenv func(string) string) (durable.Tokens, error) {
	var t durable.Tokens
	envFile := strings.TrimSuffix(cfgPath, filepath.Ext(cfgPath)) + ".env"
	fileVars, err := readEnvFile(envFile)
	if err != nil {
		return t, err
	}
	if c.Token != "" || c.TokenNext != "" {
		if err := privateFile(cfgPath, "the config, which holds a token,"); err != nil {
			return t, err
		}
	}
	pick := func(env, fromConfig string) string {
		if v := getenv(env); v != "" {
			return v
		}
		if v := fileVars[env]; v != "" {
			return v
		}
		return fromConfig
	}
	cur, next := pick("COLLIE_TOKEN", c.Token), pick("COLLIE_TOKEN_NEXT", c.TokenNext)
	if cur == "" {
		return t, errors.New("[https] is set but there is no token: set COLLIE_TOKEN (make one with: openssl rand -hex 32), in the environment or in " + envFile)
	}
	if t.Current, err = wire.CheckToken(cur); err != nil {
		return t, fmt.Errorf("COLLIE_TOKEN: %w", err)
	}
	if next != "" {
		if t.Next, err = wire.CheckToken(next); err != nil {
			return t, fmt.Errorf("COLLIE_TOKEN_NEXT: %w", err)
		}
	}
	return t, nil
}

// readEnvFile reads KEY=VALUE lines; a missing file is empty. It must be
// 0600: it holds tokens.
func readEnvFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := privateFile(path, "the .env file"); err != nil {
		return nil, err
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			return nil, fmt.Errorf("%s, line %d: not KEY=VALUE; fix the line", path, n)
		}
		vars[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return vars, nil
}

// privateFile refuses a file that group or others can read (K5).
func privateFile(path, what string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		return fmt.Errorf("%s %s can be read by others (mode %04o); fix it with: chmod 0600 %s", what, path, m, path)
	}
	return nil
}
