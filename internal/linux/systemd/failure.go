package systemd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/collie-linux/collie/internal/linux/atomicfile"
)

// Failure is a service's last word when it stopped on an error, kept in a
// file of its state folder so that the commands that find it not running
// can say why, and what to do, instead of "start it" (which fails the
// same way again). The service writes it as it stops and removes it once
// it is ready again.
type Failure struct {
	Time time.Time `json:"time"`
	// Starting says it stopped before it was ready: it cannot start, and
	// restarting it fails the same way until the cause is fixed.
	Starting bool   `json:"starting"`
	Message  string `json:"message"`        // what it said, such as the config file's line and setting
	Hint     string `json:"hint,omitempty"` // what to do, when it said
}

// FailureFile is where a service with the state folder dir keeps its
// last failure.
func FailureFile(dir string) string { return filepath.Join(dir, "last-failure.json") }

// failureCap bounds what ReadFailure reads: a message and a hint.
const failureCap = 64 << 10

// WriteFailure saves f at path, whole or not at all.
func WriteFailure(path string, f Failure) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(data, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ClearFailure removes the failure at path: the service is ready again.
func ClearFailure(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// ReadFailure reads the failure at path; false when there is none (the
// service never failed, or was ready since).
func ReadFailure(path string) (Failure, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Failure{}, false, nil
	}
	if err != nil {
		return Failure{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, failureCap+1))
	if err != nil {
		return Failure{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > failureCap {
		return Failure{}, false, fmt.Errorf("read %s: it is larger than %d bytes; remove it", path, failureCap)
	}
	var fl Failure
	if err := json.Unmarshal(data, &fl); err != nil || fl.Message == "" {
		return Failure{}, false, fmt.Errorf("read %s: it is not a failure record; remove it", path)
	}
	return fl, true, nil
}
