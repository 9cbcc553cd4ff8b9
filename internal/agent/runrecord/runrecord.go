// Package runrecord is the note each collie run keeps while it runs, in
// $XDG_RUNTIME_DIR/collie/runs/NAME.json, for collie doctor: which runs
// are in progress and which protection each has. It is a leaf, so the
// doctor reads it without linking the run's agent.
package runrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
)

// Record is one run.
type Record struct {
	Name       string    `json:"name"`
	PID        int       `json:"pid"` // collie run's, the agent's process
	Socket     string    `json:"socket"`
	Command    string    `json:"command"` // the client: the command's base name
	Folder     string    `json:"folder"`
	Protection string    `json:"protection"` // "cgroup scope", "child cgroup" or "process family"
	Unit       string    `json:"unit,omitempty"`
	Cgroup     string    `json:"cgroup,omitempty"`
	Sandbox    bool      `json:"sandbox,omitempty"` // under bubblewrap (collie run --sandbox)
	Attached   bool      `json:"attached"`          // the run's agent is in sources.json
	Started    time.Time `json:"started"`
}

// Dir is the folder of the records under the runtime folder
// ($XDG_RUNTIME_DIR).
func Dir(runtime string) string { return filepath.Join(runtime, "collie", "runs") }

func path(dir, name string) string { return filepath.Join(dir, name+".json") }

// Write records r (a temporary file renamed into place).
func Write(dir string, r Record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path(dir, r.Name), append(b, '\n'))
}

// Remove removes the record of the run name.
func Remove(dir, name string) error {
	if err := os.Remove(path(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// List reads every record in dir, by name; a file that is not a record
// is named in bad.
func List(dir string) (rs []Record, bad []string, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var r Record
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Name+".json" != e.Name() {
			bad = append(bad, filepath.Join(dir, e.Name()))
			continue
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs, bad, nil
}
