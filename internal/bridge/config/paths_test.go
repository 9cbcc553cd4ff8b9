package config

import (
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Paths
		wantErr string
	}{
		{
			name: "xdg set",
			env:  map[string]string{"HOME": "/home/a", "XDG_CONFIG_HOME": "/c", "XDG_STATE_HOME": "/s", "XDG_RUNTIME_DIR": "/run/user/1000"},
			want: Paths{Config: "/c/collie", State: "/s/collie", Runtime: "/run/user/1000"},
		},
		{
			name: "defaults under home",
			env:  map[string]string{"HOME": "/home/a", "XDG_RUNTIME_DIR": "/run/user/1000"},
			want: Paths{Config: "/home/a/.config/collie", State: "/home/a/.local/state/collie", Runtime: "/run/user/1000"},
		},
		{name: "no runtime dir", env: map[string]string{"HOME": "/home/a"}, wantErr: "XDG_RUNTIME_DIR is not set"},
		{name: "relative runtime dir", env: map[string]string{"HOME": "/h", "XDG_RUNTIME_DIR": "run"}, wantErr: "not an absolute path"},
		{name: "relative config", env: map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "c", "XDG_RUNTIME_DIR": "/r"}, wantErr: "XDG_CONFIG_HOME"},
		{name: "no home", env: map[string]string{"XDG_RUNTIME_DIR": "/r"}, wantErr: "set HOME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if got.Control() != "/run/user/1000/collie/control.sock" || got.Desk() != "/run/user/1000/desk" {
				t.Fatalf("control %s desk %s", got.Control(), got.Desk())
			}
		})
	}
}
