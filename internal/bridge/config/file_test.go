package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, wantErr string
		exists              bool
	}{
		{name: "missing file means defaults", path: filepath.Join(dir, "none.toml")},
		{name: "empty file", path: write("empty.toml", ""), exists: true},
		{name: "comments only", path: write("comments.toml", "# reserved\n\n"), exists: true},
		{name: "unknown key is refused", path: write("unknown.toml", "# x\npoll = 5\n"), exists: true,
			wantErr: `unknown.toml, line 2: unknown setting "poll"; remove it, or see collie.toml(5) for the settings there are`},
		{name: "unknown table key is refused", path: write("table.toml", "[push]\nurl = \"x\"\n"), exists: true,
			wantErr: `unknown setting "push`},
		{name: "devices", path: write("devices.toml", "[devices]\nlisten = \"127.0.0.1:9000\"\ntls = \"on\"\n"), exists: true},
		{name: "unknown devices key", path: write("dev2.toml", "[devices]\nport = 1\n"), exists: true, wantErr: `unknown setting "devices.port"`},
		{name: "agents", path: write("agents.toml", "[agents]\nplatform_key_file = \"/etc/raft/platform.pub\"\n"), exists: true},
		{name: "agents key file must be absolute", path: write("agents2.toml", "[agents]\nplatform_key_file = \"platform.pub\"\n"), exists: true,
			wantErr: `[agents] platform_key_file "platform.pub" is not an absolute path`},
		{name: "unknown agents key", path: write("agents3.toml", "[agents]\nkey = 1\n"), exists: true, wantErr: `unknown setting "agents.key"`},
		{name: "bad syntax names the line", path: write("bad.toml", "a = = 1\n"), exists: true,
			wantErr: "bad.toml, line 1 column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, exists, err := Load(tt.path)
			if exists != tt.exists {
				t.Errorf("exists = %v, want %v", exists, tt.exists)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("err = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestConfigFile(t *testing.T) {
	p := Paths{Config: "/c/collie"}
	if got := p.ConfigFile(); got != "/c/collie/config.toml" {
		t.Errorf("ConfigFile = %q", got)
	}
}

func TestDeviceListen(t *testing.T) {
	off, other := "", "0.0.0.0:9000"
	for _, tt := range []struct {
		d    Devices
		addr string
		on   bool
	}{
		{Devices{}, DefaultDeviceListen, true},
		{Devices{Listen: &off}, "", false},
		{Devices{Listen: &other}, other, true},
	} {
		if addr, on := tt.d.DeviceListen(); addr != tt.addr || on != tt.on {
			t.Errorf("DeviceListen(%+v) = %q %v, want %q %v", tt.d, addr, on, tt.addr, tt.on)
		}
	}
}
