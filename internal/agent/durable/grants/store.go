package grants

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
	"github.com/collie-linux/collie/internal/protocol/jsonstrict"
	"github.com/collie-linux/collie/internal/protocol/wire"
)

// Store keeps "always allow" grants across restarts.
type Store interface {
	Load() ([]wire.Grant, error)
	Save([]wire.Grant) error
}

// File keeps grants in a JSON file at the path it names, mode 0600,
// replaced whole on every change (a failed write leaves the old file).
type File string

// Load implements Store; a missing file holds no grants.
func (f File) Load() ([]wire.Grant, error) {
	b, err := os.ReadFile(string(f))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the grants: %w", err)
	}
	var gs []wire.Grant
	if err := jsonstrict.Unmarshal(b, &gs); err != nil {
		return nil, fmt.Errorf("%s is not a list of grants (%v); remove it to start with none", f, err)
	}
	return gs, nil
}

// Save implements Store.
func (f File) Save(gs []wire.Grant) error {
	b, err := json.MarshalIndent(gs, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(string(f), append(b, '\n'))
}
