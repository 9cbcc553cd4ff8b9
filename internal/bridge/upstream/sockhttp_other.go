//go:build !unix

package upstream

import (
	"errors"
	"time"
)

// alive says no here: the socket transport refuses on systems without
// file owners (sockpath), so no kept connection is ever reused.
func (c *keptConn) alive(time.Time) bool { return false }

// awaitReply has nothing to wait on here: no kept connection is made.
func (c *keptConn) awaitReply() error { return errors.ErrUnsupported }
