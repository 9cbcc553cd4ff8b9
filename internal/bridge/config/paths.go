// Package config finds Collie's files: the XDG folders for configuration,
// state and runtime sockets.
package config

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Paths are the folders Collie uses, already joined with "collie".
type Paths struct {
	Config  string // $XDG_CONFIG_HOME/collie: config.toml, sources.json
	State   string // $XDG_STATE_HOME/collie: audit log, devices, keys
	Runtime string // $XDG_RUNTIME_DIR: control socket, agents' desk folder
}

// FromEnv reads the XDG variables through getenv (os.Getenv in production),
// with the XDG defaults under HOME. XDG_RUNTIME_DIR has no safe default: it
// must be a private folder that lives as long as the login.
func FromEnv(getenv func(string) string) (Paths, error) {
	home := getenv("HOME")
	dir := func(env, fallback string) (string, error) {
		if v := getenv(env); v != "" {
			if !filepath.IsAbs(v) {
				return "", fmt.Errorf("%s is %q, which is not an absolute path; unset it or give a full path", env, v)
			}
			return v, nil
		}
		if home == "" {
			return "", fmt.Errorf("neither %s nor HOME is set; set HOME", env)
		}
		return filepath.Join(home, fallback), nil
	}
	cfg, err := dir("XDG_CONFIG_HOME", ".config")
	if err != nil {
		return Paths{}, err
	}
	state, err := dir("XDG_STATE_HOME", ".local/state")
	if err != nil {
		return Paths{}, err
	}
	run := getenv("XDG_RUNTIME_DIR")
	if run == "" {
		return Paths{}, errors.New("XDG_RUNTIME_DIR is not set; log in through a session, or run: export XDG_RUNTIME_DIR=/run/user/$(id -u)")
	}
	if !filepath.IsAbs(run) {
		return Paths{}, fmt.Errorf("XDG_RUNTIME_DIR is %q, which is not an absolute path; set it to /run/user/$(id -u)", run)
	}
	return Paths{
		Config:  filepath.Join(cfg, "collie"),
		State:   filepath.Join(state, "collie"),
		Runtime: run,
	}, nil
}

// Sources is the list of attached durable agents (K5).
func (p Paths) Sources() string { return filepath.Join(p.Config, "sources.json") }

// Control is the daemon's control socket, for the collie command.
func (p Paths) Control() string { return filepath.Join(p.Runtime, "collie", "control.sock") }

// Desk is the folder of durable agents' sockets (L1).
func (p Paths) Desk() string { return filepath.Join(p.Runtime, "desk") }
