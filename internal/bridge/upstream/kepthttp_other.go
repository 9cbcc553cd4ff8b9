//go:build !unix

package upstream

import "time"

// alive says no here: without a way to peek at a descriptor, a kept
// connection the agent may have closed is never reused.
func (c *keptConn) alive(time.Time) bool { return false }

// awaitReply returns at once here: the reply is read through a buffer.
func (c *keptConn) awaitReply() error { return nil }
