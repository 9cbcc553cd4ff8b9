//go:build !unix

package loginclient

import (
	"context"
	"errors"
)

// takeLock: agent platforms run agents on Linux (and macOS).
func takeLock(context.Context, string) (func(), error) {
	return nil, errors.New("agent login's refresh lock needs flock(2), which this system does not have")
}
