package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collie-linux/collie/internal/cli"
)

const goodToken = "3f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a8c0e1b3d5f7a9c1e5b2d4f6a"

// TestAttachK2 runs each K2 rule through `collie durable attach`: every
// refusal is one sentence naming the rule, nothing is written, and the
// token never appears in what is printed.
func TestAttachK2(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		token string // "" with unset=true: the variable is not set
		unset bool
		want  string
	}{
		{"K2_good_https", "https://agent.example.invalid/collie", goodToken, false, ""},
		{"K2_good_loopback_http", "http://127.0.0.1:8443", goodToken, false, ""},
		{"K2_good_localhost_http", "http://localhost:8443/", goodToken, false, ""},
		{"K2_token_trimmed", "https://a.invalid", "  " + goodToken + "\n", false, ""},
		{"K2_http_other_host", "http://agent.example.invalid:80", goodToken, false, "plain http:// is only for an agent on this machine"},
		{"K2_http_no_port", "http://127.0.0.1", goodToken, false, "an http:// URL needs a port"},
		{"K2_ftp", "ftp://a.invalid", goodToken, false, "the URL must start with https://"},
		{"K2_user_password", "https://me:pw@a.invalid", goodToken, false, "the URL has a user name or password"},
		{"K2_query", "https://a.invalid/?x=1", goodToken, false, "the URL has a query"},
		{"K2_fragment", "https://a.invalid/#top", goodToken, false, "the URL has a fragment"},
		{"K2_too_long", "https://a.invalid/" + strings.Repeat("a", 2048), goodToken, false, "the limit is 2048"},
		{"K2_no_host", "https:///path", goodToken, false, "the URL has no host"},
		{"K2_space", "https://a.invalid/a b", goodToken, false, "space or control character"},
		{"K2_token_short", "https://a.invalid", "abc123", false, "TOKEN: the token is 6 bytes; it needs at least 32"},
		{"K2_token_space", "https://a.invalid", goodToken[:20] + " " + goodToken[:20], false, "TOKEN: the token has a space"},
		{"K2_token_non_ascii", "https://a.invalid", goodToken + "é", false, "non-ASCII"},
		{"K2_token_too_long", "https://a.invalid", strings.Repeat("a", 4097), false, "the limit is 4096"},
		{"K2_token_unset", "https://a.invalid", "", true, "the environment variable TOKEN is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.unset {
				os.Unsetenv("TOKEN")
			} else {
				t.Setenv("TOKEN", tt.token)
			}
			var out, errOut strings.Builder
			e := &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
				return map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "XDG_RUNTIME_DIR": dir}[k]
			}}
			err := dispatch(context.Background(), e, []string{"durable", "attach", "r", "--url", tt.url, "--token-env", "TOKEN"})
			printed := out.String() + errOut.String()
			if err != nil {
				printed += err.Error()
			}
			if strings.Contains(printed, strings.TrimSpace(goodToken)) || (len(tt.token) > 8 && strings.Contains(printed, strings.TrimSpace(tt.token))) {
				t.Fatalf("K5: the token was printed: %q", printed)
			}
			_, statErr := os.Stat(filepath.Join(dir, "collie", "sources.json"))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused a good source: %v", err)
				}
				if !strings.Contains(out.String(), "(token set)") {
					t.Errorf("K5: attach printed %q, want (token set)", out.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if !errors.Is(statErr, os.ErrNotExist) {
				t.Fatalf("sources.json was written for a refused source")
			}
		})
	}
}

func TestSocketPlatformT3Windows(t *testing.T) {
	err := socketPlatform("windows")
	want := "a private socket needs Unix user ids; on Windows use --url <https://...> --token-env VAR"
	if err == nil || cli.Text(err) != want { // message; hint
		t.Fatalf("err = %v, want %q", err, want)
	}
	if socketPlatform("linux") != nil || socketPlatform("darwin") != nil {
		t.Fatal("the socket transport was refused on a Unix")
	}
}

// TestAttachT2SocketPath: `collie durable attach --socket` takes the path
// exactly as given, and refuses one the bridge would walk as one path and
// connect to as another: relative, not clean, with a control byte, or too
// long for a socket address (T2). Nothing is written for a refused path.
func TestAttachT2SocketPath(t *testing.T) {
	tests := []struct {
		name, socket, want string // want "" means attached
	}{
		{"T2_clean", "/run/user/1000/desk/a.sock", ""},
		{"T2_relative", "desk/a.sock", "durable agent a: the socket path desk/a.sock is not absolute; give the full path"},
		{"T2_dot_relative", "./a.sock", "the socket path ./a.sock is not absolute; give the full path"},
		{"T2_relative_dotdot", "x/../desk/a.sock", "the socket path x/../desk/a.sock is not absolute; give the full path"},
		{"T2_dotdot", "/run/user/1000/x/../desk/a.sock", `durable agent a: the socket path /run/user/1000/x/../desk/a.sock is not in clean form; write it without "." or ".." parts and without doubled or trailing slashes, as the agent listens on it`},
		{"T2_dot", "/run/user/1000/./desk/a.sock", "is not in clean form"},
		{"T2_double_slash", "/run/user/1000//desk/a.sock", "is not in clean form"},
		{"T2_trailing_slash", "/run/user/1000/desk/a.sock/", "is not in clean form"},
		{"T2_newline", "/run/user/1000/desk/a\n.sock", `the socket path "/run/user/1000/desk/a\n.sock" has a control character; give the path without it`},
		{"T2_over_sun_path", "/run/user/1000/desk/" + strings.Repeat("a", 90) + ".sock", "a Unix socket address holds; use a shorter path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var out, errOut strings.Builder
			e := &env{stdout: &out, stderr: &errOut, getenv: func(k string) string {
				return map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "XDG_RUNTIME_DIR": dir}[k]
			}}
			err := dispatch(context.Background(), e, []string{"durable", "attach", "a", "--socket", tt.socket})
			data, readErr := os.ReadFile(filepath.Join(dir, "collie", "sources.json"))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused a good socket path: %v", err)
				}
				if !strings.Contains(string(data), `"socket": "`+tt.socket+`"`) {
					t.Fatalf("sources.json = %s, want the path exactly as given", data)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if !errors.Is(readErr, os.ErrNotExist) {
				t.Fatalf("sources.json was written for a refused path: %s", data)
			}
		})
	}
}
