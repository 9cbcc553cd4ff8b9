package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCheckConfigAsAtStart_L4: --check-config runs what the agent runs at
// start, so it refuses what would stop the agent there (a token transport
// without a token, plain HTTP beyond loopback, a key others can read),
// naming the file; and every way out is one "collie-agent: error: " line
// with its exit status, and a "hint:" line where there is a fix to give
// .
func TestCheckConfigAsAtStart_L4(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, toml string
		args       []string
		code       int
		want       string
		hint       string
	}{
		{name: "https_without_token", toml: "[https]\nlisten = \"127.0.0.1:0\"\n", code: 1, want: "there is no token: set COLLIE_TOKEN"},
		{name: "https_plain_beyond_loopback", toml: "[https]\nlisten = \"0.0.0.0:8443\"\ntoken = \"" + strings.Repeat("a", 64) + "\"\n", code: 1, want: "needs TLS"},
		{name: "https_bad_cert", toml: "[https]\nlisten = \"127.0.0.1:0\"\ncert = \"" + key + "\"\nkey = \"" + key + "\"\ntoken = \"" + strings.Repeat("a", 64) + "\"\n", code: 1, want: "[https] load cert"},
		{name: "unknown_key", toml: "titel = \"x\"\n", code: 1, want: "line 1"},
		{name: "bad_flag", args: []string{"--nope"}, code: 2, want: "collie-agent: error: flag provided but not defined: --nope\n", hint: "see collie-agent --help"},
		{name: "extra_argument", args: []string{"x"}, code: 2, want: "collie-agent: error: unexpected argument \"x\"\n", hint: "see collie-agent --help"},
		{name: "bad_name", args: []string{"--name", "Bad/Name"}, code: 2, want: "collie-agent: error: the name \"Bad/Name\" is not valid\n", hint: "use 1 to 64 of a-z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args, file := tt.args, ""
			if tt.toml != "" {
				file = filepath.Join(dir, tt.name+".toml")
				if err := os.WriteFile(file, []byte(tt.toml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"--check-config", "--config", file}
			}
			var out, errOut strings.Builder
			code := run(args, &out, &errOut)
			lines := 1
			if tt.hint != "" {
				lines = 2
			}
			if code != tt.code || !strings.HasPrefix(errOut.String(), "collie-agent: error: ") || !strings.Contains(errOut.String(), tt.want) ||
				!strings.Contains(errOut.String(), file) || strings.Count(errOut.String(), "\n") != lines ||
				tt.hint != "" && !strings.Contains(errOut.String(), "\ncollie-agent: hint: "+tt.hint) {
				t.Errorf("code %d, stderr %q; want %d and %q", code, errOut.String(), tt.code, tt.want)
			}
		})
	}
}

// TestSignalsCaughtFirst_L2: from catchSignals on, a SIGHUP is queued for
// the agent instead of killing it (its default action) and a SIGTERM that
// came before serving still ends the serving context.
func TestSignalsCaughtFirst_L2(t *testing.T) {
	sig := catchSignals()
	defer sig.stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig.hup:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reach the channel")
	}
	ctx, cancel := sig.context() // made after the TERM came
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a SIGTERM from before serving did not end the context")
	}
}

// TestCheckConfigMissingFile_L4: --check-config on a file that does not
// exist is not "valid": exit 1 with the file named and what to do, given
// with --config or found at the default place (where the agent itself
// would start with its demo).
func TestCheckConfigMissingFile_L4(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	for _, tt := range []struct {
		name      string
		args      []string
		want, fix string
	}{
		{"given", []string{"--check-config", "--config", dir + "/nope.toml"},
			"collie-agent: error: " + dir + "/nope.toml does not exist, so there is no config to check\n",
			"collie-agent: hint: give the path of a file that exists, or write one there (see collie-agent(1); an example: /usr/share/doc/collie/examples/collie-agent.toml)\n"},
		{"default", []string{"--check-config", "--name", "ops"},
			"collie-agent: error: there is no config file at " + dir + "/collie-agent/ops.toml: collie-agent ops starts with the demo (one conversation, one yes/no question)\n",
			"collie-agent: hint: to configure it, write the file (see collie-agent(1); an example: /usr/share/doc/collie/examples/collie-agent.toml), or give another with --config FILE\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := run(tt.args, &out, &errOut)
			if code != 1 || out.Len() != 0 || errOut.String() != tt.want+tt.fix {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, out.String(), errOut.String(), tt.want+tt.fix)
			}
		})
	}
}
